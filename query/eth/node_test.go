package eth_test

import (
	"testing"

	"github.com/wharfhq/wharf/query/eth"
)

func TestRedactURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"http://127.0.0.1:8545", "http://127.0.0.1:8545"},
		{"http://127.0.0.1:8545/", "http://127.0.0.1:8545"},
		{"https://mainnet.infura.io/v3/KEY", "https://mainnet.infura.io/redacted"},
		{"https://eth-mainnet.g.alchemy.com/v2/KEY?x=1", "https://eth-mainnet.g.alchemy.com/redacted?redacted"},
		{"https://node.example?apikey=KEY", "https://node.example?redacted"},
		{"https://user:KEY@node.example", "https://redacted@node.example"},
		{"wss://user@node.example/ws/KEY#frag", "wss://redacted@node.example/redacted#redacted"},
		{"/var/run/geth.ipc", "?"},
		{"::", "?"},
		{"//KEY", "?"}, // no scheme: the key would be the host
		{"mainnet.infura.io:443/v3/KEY", "?"},
	} {
		if got := eth.RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
