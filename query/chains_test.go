package query_test

import (
	"testing"

	"github.com/wharfhq/wharf/query"
)

func TestKnownNetwork(t *testing.T) {
	for _, c := range []struct {
		id     uint64
		symbol string
	}{
		{1, "ETH"}, {11155111, "ETH"}, {17000, "ETH"}, {10, "ETH"}, {8453, "ETH"}, {42161, "ETH"},
		{137, "POL"}, {80002, "POL"}, {56, "BNB"}, {43114, "AVAX"}, {1337, "ETH"},
	} {
		n, ok := query.KnownNetwork(c.id)
		if !ok || n.Native.Symbol != c.symbol || n.Native.Decimals != 18 {
			t.Errorf("KnownNetwork(%d) = %+v, %v; want %s, 18 decimals", c.id, n, ok, c.symbol)
		}
	}
	if n, ok := query.KnownNetwork(999_999_999); ok {
		t.Errorf("KnownNetwork(999999999) = %+v, want none", n)
	}
	seen := make(map[uint64]bool)
	for _, n := range query.Networks() {
		if seen[n.ChainID] || n.Name == "" || n.Native.Symbol == "" {
			t.Errorf("table row %+v repeated or incomplete", n)
		}
		seen[n.ChainID] = true
	}
}
