package utxo_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/utxo"
)

// TestBalancesAtTip: on both dialects, the node's balances at its tip
// (scantxoutset on Core, the address index and gettxout on btcd) equal
// the sums of the moves Activity read from block 0, for an address that
// mined, one that received and spent part, one never paid; a block below
// the tip, a token, and a Reader opened for another network are refused.
func TestBalancesAtTip(t *testing.T) {
	for _, dialect := range []string{testenv.DialectBtcd, testenv.DialectCore} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			c := newRegtestChain(t, dialect)
			keyB, _ := btcec.PrivKeyFromBytes(bytes.Repeat([]byte{2}, 32))
			b := c.p2wpkh(keyB.PubKey())
			never := c.Fresh()

			cb := c.coinbase(t, 1)
			tx1, err := c.send(ctx, []coin{cb}, wire.NewTxOut(7_0000_0000, b.Script), wire.NewTxOut(cb.value-7_0000_0000-1000, c.payer.Script))
			if err != nil {
				t.Fatal(err)
			}
			c.node.Generate(t, 1, c.payer.String)
			h1, _ := chainhash.NewHashFromStr(tx1)
			// B spends part back to the payer, with change to itself.
			if _, err := c.send(ctx, []coin{{op: *wire.NewOutPoint(h1, 0), value: 7_0000_0000, key: keyB, script: b.Script}},
				wire.NewTxOut(2_0000_0000, c.payer.Script), wire.NewTxOut(4_9999_0000, b.Script)); err != nil {
				t.Fatal(err)
			}
			c.node.Generate(t, 2, c.payer.String)

			tip, err := c.reader.Head(ctx)
			if err != nil {
				t.Fatal(err)
			}
			addrs := []string{c.payer.String, b.String, never}
			tracked := map[string]bool{}
			for _, a := range addrs {
				tracked[a] = true
			}
			acts, err := c.reader.Activity(ctx, chain.Query{From: 0, To: tip, Tracked: tracked})
			if err != nil || uint64(len(acts)) != tip+1 {
				t.Fatalf("activity of blocks 0-%d: %d blocks, %v", tip, len(acts), err)
			}
			qs := []query.BalanceQuery{{Address: c.payer.String}, {Address: b.String}, {Address: never}}
			got, err := c.reader.Balances(ctx, tip, qs)
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range addrs {
				want := utxo.BalanceAt(acts, a, tip)
				if got[i].Address != a || got[i].Asset != query.AssetNative || got[i].Block != tip || got[i].Amount.Cmp(want.Total) != 0 {
					t.Errorf("%s: node's balance %+v, the moves sum to %s", a, got[i], want.Total)
				}
			}
			if got[1].Amount.String() != "499990000" || got[2].Amount.Sign() != 0 {
				t.Errorf("B %s, never paid %s; want 499990000 and 0", got[1].Amount, got[2].Amount)
			}

			if _, err := c.reader.Balances(ctx, tip-1, qs); !errors.Is(err, chain.ErrNotImplemented) {
				t.Errorf("below the tip: %v, want ErrNotImplemented", err)
			}
			if _, err := c.reader.Balances(ctx, tip, []query.BalanceQuery{{Address: b.String, Contract: "x"}}); !errors.Is(err, chain.ErrNotImplemented) {
				t.Errorf("a token: %v, want ErrNotImplemented", err)
			}
			other, err := utxo.Open(c.node.URL, network(t, "bitcoin"))
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			if _, err := other.ChainID(ctx); err == nil || !bytes.Contains([]byte(err.Error()), []byte("not bitcoin")) {
				t.Errorf("a Reader of bitcoin on a %s node: ChainID %v, want it refused", c.net.Name, err)
			}
		})
	}
}
