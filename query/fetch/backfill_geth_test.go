package fetch_test

import (
	"context"
	"log/slog"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/fetch"
)

// TestHistoryGeth builds an address's history across a thousand blocks of
// a real geth --dev node (which keeps all state: an archive), with other
// traffic between, then subscribes late: with --backfill-blocks all the
// list is every transfer sent to it, with a window exactly the window's.
func TestHistoryGeth(t *testing.T) {
	g := testenv.NewGeth(t)
	ctx := context.Background()
	x := "0x00000000000000000000000000000000000a11ce"
	y := "0x0000000000000000000000000000000000000b0b"
	const n = 1000
	hashes := make([]string, n)
	var nonce hexutil.Uint64
	if err := g.Call(ctx, &nonce, "eth_getTransactionCount", g.Account, "pending"); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		to, value := y, int64(1+i)
		if i%40 == 13 {
			to, value = x, int64(1000+i)
		}
		tx := map[string]any{"from": g.Account, "to": to, "value": hexutil.EncodeBig(bigInt(value)), "gas": "0x5208",
			"nonce": hexutil.EncodeUint64(uint64(nonce) + uint64(i))}
		if err := g.Call(ctx, &hashes[i], "eth_sendTransaction", tx); err != nil {
			t.Fatal(err)
		}
	}
	sent := make(map[string]uint64) // X's transactions, by block
	value := make(map[uint64]int64) // wei X received, by block
	for i, h := range hashes {
		r, err := g.Receipt(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if i%40 == 13 {
			b, err := hexutil.DecodeUint64(r["blockNumber"].(string))
			if err != nil {
				t.Fatal(err)
			}
			sent[h] = b
			value[b] += int64(1000 + i)
		}
	}
	src, err := evm.Dial(ctx, g.URL, evm.SourceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	head, err := src.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d transactions in %d blocks, %d to X", n, head, len(sent))

	for _, c := range []struct {
		name   string
		cfg    fetch.Config
		window uint64
	}{
		{"All", fetch.Config{BackfillAll: true, BackfillSlice: 128}, 0},
		{"Window", fetch.Config{BackfillBlocks: head / 2}, head / 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, key := storeWithKey(t)
			cfg := c.cfg
			cfg.Chain, cfg.Store, cfg.Reader, cfg.Logger = chain, db, evm.NewReader(src), slog.New(slog.DiscardHandler)
			f, err := fetch.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.FetchOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Subscribe(ctx, key.AccountID, chain, x); err != nil {
				t.Fatal(err)
			}
			if err := f.FetchOnce(ctx); err != nil {
				t.Fatal(err)
			}
			cp, _, _ := db.Checkpoint(ctx, chain)
			from := uint64(0)
			if c.window > 0 {
				from = cp.Number + 1 - c.window
			}
			sub, err := db.Subscription(ctx, key.AccountID, chain, x)
			if err != nil || sub.State != query.StateActive || sub.HistoryStart != from {
				t.Fatalf("subscription %+v, %v; want ACTIVE from %d", sub, err, from)
			}
			txs, err := db.AccountTransactions(ctx, key.AccountID, chain, x, nil, 1000)
			if err != nil {
				t.Fatal(err)
			}
			got := make(map[string]uint64)
			for _, tx := range txs {
				got[tx.Hash] = tx.BlockNumber
			}
			want := 0
			for h, b := range sent {
				if b < from {
					continue
				}
				want++
				if got[h] != b {
					t.Errorf("transfer %s of block %d not listed", h, b)
				}
			}
			if len(got) != want {
				t.Errorf("%d transactions listed, %d sent to X from block %d", len(got), want, from)
			}
			if want == 0 || (c.window > 0 && want == len(sent)) {
				t.Fatalf("the case tests nothing: %d of %d transfers in range", want, len(sent))
			}
			// The statement: a row at each block where X received, from
			// the history's start, each balance the sum of what X had
			// received by then (X holds nothing else).
			rows, err := db.AccountBalanceChanges(ctx, key.AccountID, chain, x, nil, 1000)
			if err != nil {
				t.Fatal(err)
			}
			stmt := make(map[uint64]query.BalanceChange)
			for _, r := range rows {
				stmt[r.Block] = r
			}
			balance := int64(0)
			for b := uint64(0); b <= cp.Number; b++ {
				balance += value[b]
				r, ok := stmt[b]
				switch {
				case b < from || value[b] == 0:
					if ok {
						t.Errorf("statement row at block %d: %+v, X received nothing there or it is before %d", b, r, from)
					}
				case !ok:
					t.Errorf("no statement row at block %d, where X received %d", b, value[b])
				case r.Amount != query.AmountOf(value[b]) || r.BalanceAfter != query.AmountOf(balance) || (r.Checked && !r.Reconciled):
					t.Errorf("statement row at block %d: %+v, want amount %d, balance after %d, reconciled", b, r, value[b], balance)
				}
			}
		})
	}
}

func bigInt(v int64) *big.Int { return big.NewInt(v) }
