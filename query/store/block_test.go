package store_test

import (
	"context"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

func TestStoreBlocks(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, clk *testenv.Clock) {
		ctx := context.Background()
		var batch []query.BlockData
		for n := uint64(1); n <= 4; n++ {
			batch = append(batch, query.BlockData{Block: block(n),
				Txs: []query.Transaction{tx(n, 0, addrA, addrB), tx(n, 3, addrB, addrA)}})
		}
		batch[3].Balances = []query.Balance{{Chain: "ETH", Address: addrA, Asset: query.AssetNative, Symbol: "ETH",
			Decimals: 18, Amount: query.AmountOf(5), Block: 4, Updated: clk.Now()}}
		for range 2 { // storing a batch twice duplicates nothing
			if err := db.StoreBlocks(ctx, "ETH", batch); err != nil {
				t.Fatal(err)
			}
		}
		if cp, ok, err := db.Checkpoint(ctx, "ETH"); err != nil || !ok || cp != block(4) {
			t.Fatalf("Checkpoint = %+v, %v, %v; want the batch's last block %+v", cp, ok, err, block(4))
		}
		if b, err := db.StoredBlock(ctx, "ETH", 2); err != nil || b != block(2) {
			t.Fatalf("StoredBlock(2) = %+v, %v", b, err)
		}
		page, err := db.Transactions(ctx, "ETH", addrA, nil, 100)
		if err != nil || len(page) != 8 {
			t.Fatalf("Transactions = %d, %v; want 8", len(page), err)
		}
		if bals, err := db.Balances(ctx, "ETH", addrA); err != nil || len(bals) != 1 || bals[0].Amount != query.AmountOf(5) {
			t.Fatalf("Balances = %+v, %v", bals, err)
		}

		// A batch that cannot be stored stores nothing: the checkpoint
		// stays where it was.
		bad := []query.BlockData{{Block: block(5), Txs: []query.Transaction{tx(5, 0, addrA, addrB)}},
			{Block: block(6), Txs: []query.Transaction{tx(6, 0, addrA, addrB)}}}
		bad[1].Txs[0].Value = query.AmountOf(-1)
		if err := db.StoreBlocks(ctx, "ETH", bad); err == nil {
			t.Fatal("StoreBlocks with a negative value succeeded")
		}
		if cp, _, _ := db.Checkpoint(ctx, "ETH"); cp != block(4) {
			t.Fatalf("Checkpoint after a failed batch = %+v, want %+v", cp, block(4))
		}
		if _, err := db.Transaction(ctx, "ETH", tx(5, 0, addrA, addrB).Hash); err == nil {
			t.Fatal("a block of the failed batch was stored")
		}
	})
}
