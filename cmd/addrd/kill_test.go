package main

import (
	"context"
	"math/big"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/evm/devchain"
	"github.com/wharfhq/wharf/query/store"
)

// TestKillWhileTracing: addrd serve follows a real geth --dev with traces
// on while contract payouts (internal transfers) keep coming; it is
// killed with SIGKILL in the middle, and a new process on the same
// database finishes: every payout is listed once, and the statement
// chains and adds up to the node's balance, 0 wei unexplained.
func TestKillWhileTracing(t *testing.T) {
	g := testenv.NewGeth(t)
	ctx := context.Background()
	send := func(to *common.Address, value *big.Int, data []byte) string {
		t.Helper()
		if to == nil {
			return g.Transact(t, "", value, data, 1_000_000)["contractAddress"].(string)
		}
		return g.Transact(t, to.Hex(), value, data, 1_000_000)["transactionHash"].(string)
	}
	fwd := common.HexToAddress(send(nil, nil, devchain.InitCode(devchain.ForwarderCode())))
	payee := common.HexToAddress("0x00000000000000000000000000000000000c0ffe")
	payout := func(i int) string {
		return send(&fwd, big.NewInt(int64(1_000_000+i)), common.LeftPadBytes(payee.Bytes(), 32))
	}

	dsn := filepath.Join(t.TempDir(), "addrd.db")
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := db.CreateAPIKey(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	watched := []string{strings.ToLower(payee.Hex()), g.Account}
	for _, a := range watched {
		if _, err := db.Subscribe(ctx, key.AccountID, "ETH", a); err != nil {
			t.Fatal(err)
		}
	}
	checkpoint := func() uint64 {
		cp, _, err := db.Checkpoint(ctx, "ETH")
		if err != nil {
			t.Fatal(err)
		}
		return cp.Number
	}
	args := []string{"--db", dsn, "--chain", "ETH=" + g.URL, "--confirmations", "0", "--traces", "on"}
	var head0 hexutil.Uint64
	if err := g.Call(ctx, &head0, "eth_blockNumber"); err != nil {
		t.Fatal(err)
	}
	var payouts []string
	first := startProc(t, args...)
	// The payouts start once the subscriptions are synced, so that the head
	// follower, which traces, stores them all: a window backfill does not
	// trace (docs/fetcher.md), and this test is about a kill while tracing.
	eventually(t, 60*time.Second, "the first process syncs the subscriptions", func() bool { return checkpoint() >= uint64(head0) })
	for i := range 10 {
		payouts = append(payouts, payout(i))
	}
	eventually(t, 60*time.Second, "the first process stores a block", func() bool { return checkpoint() > 2 })
	// Killed while blocks keep coming: it is reading, tracing or writing.
	for i := 10; i < 20; i++ {
		payouts = append(payouts, payout(i))
	}
	first.cmd.Process.Kill()
	<-first.done
	for i := 20; i < 30; i++ {
		payouts = append(payouts, payout(i))
	}
	var head hexutil.Uint64
	if err := g.Call(ctx, &head, "eth_blockNumber"); err != nil {
		t.Fatal(err)
	}
	startProc(t, args...)
	eventually(t, 60*time.Second, "the second process catches up", func() bool { return checkpoint() >= uint64(head) })

	// Every payout once in the payee's list, as an internal transfer.
	txs, err := db.Transactions(ctx, "ETH", watched[0], nil, 1000)
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[string]int)
	for _, tx := range txs {
		for _, tr := range tx.Transfers {
			if tr.Kind == query.KindInternal && tr.To == watched[0] {
				seen[tx.Hash]++
			}
		}
	}
	for _, h := range payouts {
		if seen[h] != 1 {
			t.Errorf("payout %s listed %d times, want once", h, seen[h])
		}
	}
	// The statements chain, are reconciled, and end at the node's balance.
	src, err := evm.Dial(ctx, g.URL, evm.SourceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	cp := checkpoint()
	for _, a := range watched {
		rows, err := db.AccountBalanceChanges(ctx, key.AccountID, "ETH", a, nil, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var older *big.Int
		for i := len(rows) - 1; i >= 0; i-- {
			r := rows[i]
			if r.Contract != "" {
				continue
			}
			after, amount := r.BalanceAfter.Big(), r.Amount.Big()
			if r.Checked && !r.Reconciled {
				t.Errorf("%s block %d: unreconciled, difference %s", a, r.Block, r.Difference)
			}
			if older != nil && new(big.Int).Sub(after, amount).Cmp(older) != 0 {
				t.Errorf("%s block %d: starts from %s, the older row ended at %s", a, r.Block, new(big.Int).Sub(after, amount), older)
			}
			older = after
		}
		bals, err := src.Balances(ctx, cp, []query.BalanceQuery{{Address: a}})
		if err != nil || len(bals) != 1 {
			t.Fatal(bals, err)
		}
		if older == nil || query.AmountFromBig(older) != bals[0].Amount {
			t.Errorf("%s: statement ends at %v, the node says %s at %d", a, older, bals[0].Amount, cp)
		}
	}
}
