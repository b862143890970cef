package utxo_test

import (
	"testing"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/utxo"
)

// TestNetworksTable: every network of the family is a row of query's
// table of networks, of the family, with its CAIP-2 ID and coin, and the
// table has no UTXO row the family does not know.
func TestNetworksTable(t *testing.T) {
	ids := map[string]bool{}
	for _, n := range utxo.Networks() {
		ids[n.ID()] = true
		q, ok, evm := query.NetworkOf(n.ID())
		if !ok || evm || q.Family != query.FamilyUTXO || q.Native.Decimals != utxo.Decimals || q.Native.Symbol[len(q.Native.Symbol)-3:] != n.Coin {
			t.Errorf("%s (%s): query's table has %+v, %v", n.Name, n.ID(), q, ok)
		}
	}
	for _, q := range query.Networks() {
		if q.Family == query.FamilyUTXO && !ids[q.ID] {
			t.Errorf("query's table has %s (%s), which the family does not know", q.ID, q.Name)
		}
	}
}
