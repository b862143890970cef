package store_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// genAssetBooks is a statement of one address over 400 blocks whose
// assets move at different rates, and at different rates in different
// stretches: the native coin in half the blocks, a token in every block
// of two stretches and seldom elsewhere, one in every third block, one
// seldom, and three ids of an ERC-1155 contract (d.tokens[3]), one often,
// two seldom, beside a few rows of that contract's own (no token does
// that; the store allows it). A page of one asset on SQLite reads a window of blocks by
// the primary key, then the rest through the asset's index: here pages
// end in either part, and rows fall on each side of the window's edge.
func genAssetBooks(rng *rand.Rand) booksData {
	d := booksData{addr: fmt.Sprintf("0x%040x", 0xa55e7)}
	d.tokens = []string{fmt.Sprintf("0x%040x", 0xd01), fmt.Sprintf("0x%040x", 0xd02), fmt.Sprintf("0x%040x", 0xd03), fmt.Sprintf("0x%040x", 0xd04)}
	ids := []string{query.HoldingKey(query.AssetERC1155, d.tokens[3], "1"), query.HoldingKey(query.AssetERC1155, d.tokens[3], "2"),
		query.HoldingKey(query.AssetERC1155, d.tokens[3], "77")}
	moves := func(contract string, b uint64) bool {
		switch contract {
		case "":
			return rng.IntN(2) == 0
		case d.tokens[0]:
			return b%200 < 60 || rng.IntN(20) == 0
		case d.tokens[1]:
			return b%3 == 0
		case ids[0]:
			return rng.IntN(4) == 0
		case d.tokens[3]: // rows of its own beside its ids'
			return rng.IntN(30) == 0
		default:
			return rng.IntN(40) == 0
		}
	}
	balance := map[string]int64{}
	for b := range uint64(400) {
		// In (block, contract) order, as wantChanges has it.
		for _, contract := range append([]string{"", d.tokens[0], d.tokens[1], d.tokens[2], d.tokens[3]}, ids...) {
			if !moves(contract, b) {
				continue
			}
			amount := int64(rng.IntN(2000) - 1000)
			balance[contract] += amount
			kind := allKinds[rng.IntN(len(allKinds))]
			d.changes = append(d.changes, query.BalanceChange{Chain: "ETH", Address: d.addr, Contract: contract, Block: b, Time: blockTime(b),
				Amount: query.AmountOf(amount), BalanceAfter: query.AmountOf(balance[contract]), Internals: true,
				Causes: []query.Cause{{Kind: kind, TxHash: fmt.Sprintf("0x%064x", b), Amount: query.AmountOf(amount)}}})
		}
	}
	d.balances = []query.Balance{{Chain: "ETH", Address: d.addr, Asset: query.AssetNative, Symbol: "ETH", Decimals: 18, Block: 400}}
	for i, tok := range d.tokens {
		d.balances = append(d.balances, query.Balance{Chain: "ETH", Address: d.addr, Asset: query.AssetERC20, Contract: tok,
			Symbol: fmt.Sprintf("T%d", i), Decimals: 6, Block: 400})
	}
	for _, id := range ids {
		d.balances = append(d.balances, query.Balance{Chain: "ETH", Address: d.addr, Asset: query.AssetERC1155, Contract: id, Block: 400})
	}
	return d
}

// TestAssetRanges: pages of one asset (or of every id of an ERC-1155
// contract, or one id), in random block and time ranges, both orders,
// random page sizes, kinds and budgets, read page by page (through the
// row-at-a-time read the API uses, and the other), are the model's rows
// in its order: no row of the asset is skipped or read twice where a
// page's window of blocks ends and its read through the index starts, or
// where a read of a contract turns to its ids. The seed is printed on
// failure.
func TestAssetRanges(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, _ *testenv.Clock) {
		rng := testenv.Rand(t, 0xa55e7)
		d := genAssetBooks(rng)
		key := putBooks(t, db, d)
		for i := range 300 {
			r := query.Range{HasContract: true, Ascending: rng.IntN(2) == 0}
			switch j := rng.IntN(len(d.tokens) + 2); {
			case j < len(d.tokens):
				r.Contract = d.tokens[j]
			case j == len(d.tokens):
				r.Contract = query.HoldingKey(query.AssetERC1155, d.tokens[3], "2")
			}
			if rng.IntN(2) == 0 {
				r.FromBlock = uint64(rng.IntN(420))
			}
			if rng.IntN(2) == 0 {
				r.ToBlock, r.HasToBlock = r.FromBlock+uint64(rng.IntN(420)), true
			}
			if rng.IntN(4) == 0 {
				r.FromTime = blockTime(uint64(rng.IntN(420)))
			}
			if rng.IntN(4) == 0 {
				r.ToTime = blockTime(uint64(rng.IntN(420)))
			}
			if rng.IntN(4) == 0 {
				r.Kinds = []string{allKinds[rng.IntN(len(allKinds))], allKinds[rng.IntN(len(allKinds))]}
			}
			size, budget := 1+rng.IntN(12), 10_000
			if rng.IntN(3) == 0 {
				budget = 1 + rng.IntN(40) // short pages, each with a token
			}
			want := wantChanges(d, r)
			got, gotFunc := readChanges(t, db, key, d, r, size, budget)
			if !slices.Equal(got, want) || !slices.Equal(gotFunc, want) {
				t.Fatalf("asset range %d %+v, pages of %d, budget %d:\n got %v\n row at a time %v\nwant %v", i, r, size, budget, got, gotFunc, want)
			}
		}
	})
}
