package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// TestCounterpartyCreated: the contract a top-level creation makes is a
// party of that transaction: counterparty= of it lists the creation, in
// the transactions and in the statement (it listed neither: a creation's
// To is empty and its fee moves to no one).
func TestCounterpartyCreated(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, _ *testenv.Clock) {
		ctx := context.Background()
		addr, created, other := fmt.Sprintf("0x%040x", 0xa11ce), fmt.Sprintf("0x%040x", 0xc0de), fmt.Sprintf("0x%040x", 0xb0b)
		create := query.Transaction{Chain: "ETH", Hash: fmt.Sprintf("0x%064x", 1), BlockNumber: 1, BlockHash: "0xb1", BlockTime: blockTime(1),
			Status: query.StatusSuccess, From: addr, Parties: []string{created}, Value: query.AmountOf(0), Fee: query.AmountOf(21),
			Transfers: []query.Transfer{{Position: -1, Kind: query.KindFee, Asset: query.AssetNative, From: addr, Amount: query.AmountOf(21)}}}
		send := query.Transaction{Chain: "ETH", Hash: fmt.Sprintf("0x%064x", 2), BlockNumber: 2, BlockHash: "0xb2", BlockTime: blockTime(2),
			Status: query.StatusSuccess, From: addr, To: other, Value: query.AmountOf(5), Fee: query.AmountOf(21),
			Transfers: []query.Transfer{{Position: -1, Kind: query.KindTransaction, Asset: query.AssetNative, From: addr, To: other, Amount: query.AmountOf(5)}}}
		change := func(tx query.Transaction, after int64) query.BalanceChange {
			return query.BalanceChange{Chain: "ETH", Address: addr, Block: tx.BlockNumber, Time: tx.BlockTime, Amount: query.AmountOf(-21),
				BalanceAfter: query.AmountOf(after), Internals: true, Causes: []query.Cause{{Kind: query.KindFee, TxHash: tx.Hash, Amount: query.AmountOf(-21)}}}
		}
		d := booksData{addr: addr, txs: []query.Transaction{create, send}, changes: []query.BalanceChange{change(create, 979), change(send, 958)},
			balances: []query.Balance{{Chain: "ETH", Address: addr, Asset: query.AssetNative, Symbol: "ETH", Decimals: 18, Amount: query.AmountOf(958), Block: 2}}}
		key := putBooks(t, db, d)
		for _, tc := range []struct{ party, want string }{{created, create.Hash}, {other, send.Hash}} {
			r := query.Range{Counterparty: tc.party}
			_, txs, err := db.SubscriptionTxRange(ctx, key.AccountID, "ETH", addr, r, nil, 10, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(txs.Txs) != 1 || txs.Txs[0].Hash != tc.want {
				t.Errorf("transactions with counterparty %s: %d, want %s", tc.party, len(txs.Txs), tc.want)
			}
			got, _ := readChanges(t, db, key, d, r, 10, 100)
			want := fmt.Sprintf("%d/", map[string]uint64{create.Hash: 1, send.Hash: 2}[tc.want])
			if len(got) != 1 || got[0] != want {
				t.Errorf("statement with counterparty %s: %v, want [%s]", tc.party, got, want)
			}
		}
	})
}
