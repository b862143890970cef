package query_test

import (
	"strings"
	"testing"

	"github.com/wharfhq/wharf/query"
)

func TestParseChainID(t *testing.T) {
	for _, tc := range []struct {
		in, namespace, reference string
	}{
		{"eip155:1", "eip155", "1"},
		{query.EIP155(11155111), "eip155", "11155111"},
		{"bip122:000000000019d6689c085ae165831e93", "bip122", "000000000019d6689c085ae165831e93"},
		{"cosmos:cosmoshub-4", "cosmos", "cosmoshub-4"},
		{"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "solana", "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"},
	} {
		ns, ref, err := query.ParseChainID(tc.in)
		if err != nil || ns != tc.namespace || ref != tc.reference {
			t.Errorf("ParseChainID(%q) = %q, %q, %v; want %q, %q", tc.in, ns, ref, err, tc.namespace, tc.reference)
		}
	}
	for _, bad := range []string{"", "1", "eip155", "eip155:", ":1", "ei:1", "EIP155:1", "eip155:1:2", "toolongns:1",
		"eip155:" + strings.Repeat("1", 33), "eip155:1 ", "eip155:\x00", "bip122:ab.cd"} {
		if _, _, err := query.ParseChainID(bad); err == nil {
			t.Errorf("ParseChainID(%q) passed", bad)
		}
	}
}
