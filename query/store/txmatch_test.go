package store_test

import (
	"testing"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// TestTxMatchesKinds: a kind filter passes a transaction that moved that
// kind for the address listed, including the two kinds that are not
// transfers: the fee its sender paid and the ether a deposit minted.
func TestTxMatchesKinds(t *testing.T) {
	const a, b = "0x00000000000000000000000000000000000000a0", "0x00000000000000000000000000000000000000b0"
	plain := query.Transaction{From: a, To: b, Fee: query.AmountOf(21000),
		Transfers: []query.Transfer{{Position: -1, Asset: query.AssetNative, From: a, To: b, Amount: query.AmountOf(5), Kind: query.KindTransaction}}}
	deposit := query.Transaction{From: a, To: b, Mint: query.AmountOf(7),
		Transfers: []query.Transfer{{Position: -1, Asset: query.AssetNative, From: a, To: b, Amount: query.AmountOf(5), Kind: query.KindTransaction}}}
	for _, c := range []struct {
		name    string
		tx      query.Transaction
		address string
		kind    string
		want    bool
	}{
		{"transaction, sender", plain, a, query.KindTransaction, true},
		{"transaction, receiver", plain, b, query.KindTransaction, true},
		{"fee, sender", plain, a, query.KindFee, true},
		{"fee, receiver", plain, b, query.KindFee, false},
		{"token, none", plain, a, query.KindToken, false},
		{"mint, none minted", plain, a, query.KindMint, false},
		{"mint, minted to the sender", deposit, a, query.KindMint, true},
		{"mint, the receiver", deposit, b, query.KindMint, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := query.Range{Kinds: []string{c.kind}}
			if got := store.TxMatches(c.tx, c.address, r); got != c.want {
				t.Errorf("TxMatches(kind=%s, %s) = %v, want %v", c.kind, c.address, got, c.want)
			}
		})
	}
}
