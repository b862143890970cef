package api_test

import (
	"strings"
	"testing"

	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/utxo"
)

// TestChainSyntax: each chain's addresses are read in its own syntax, so a
// Bitcoin chain takes base58 as written and bech32 in lower case, and an
// EVM chain refuses them as before.
func TestChainSyntax(t *testing.T) {
	btc, err := utxo.NetworkByName("bitcoin")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, t.TempDir()+"/addrd.db", func(c *api.Config) {
		c.Chains = []string{"ETH", "BTC"}
		c.Syntax = evmSyntax("ETH")
		c.Syntax["BTC"] = utxo.Syntax{Network: btc}
	})
	for _, c := range []struct {
		name, path string
		status     int
		body       string // in the body
	}{
		{"Base58", "/v1/chains/BTC/addresses/1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", 200, `"chains/BTC/addresses/1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa"`},
		{"Bech32", "/v1/chains/BTC/addresses/BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4", 200, `"chains/BTC/addresses/bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"`},
		{"BTCOnETH", "/v1/chains/ETH/addresses/1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", 400, "malformed address '1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa': want 0x and 40 hex digits"},
		{"ETHOnBTC", "/v1/chains/BTC/addresses/0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed", 400, "neither bech32 of a known network nor base58check"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("PUT", c.path, e.alice)
			if r.status != c.status || !strings.Contains(string(r.body), c.body) {
				t.Fatalf("PUT %s: %d %s, want %d with %s", c.path, r.status, r.body, c.status, c.body)
			}
		})
	}
}
