package fetch_test

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/fetch"
)

// TestFetchResubscribeBehind resubscribes an address while the fetcher is
// further behind the node than stateWindow (after a restart, say).
func TestFetchResubscribeBehind(t *testing.T) {
	for _, c := range []struct {
		name   string
		behind int
		pruned bool
	}{
		// The node still has the state of the fetcher's block: the sync
		// reads the balances there, the statement restarts there and the
		// gap's rows meet the earlier ones; nothing is counted twice.
		{"StateKept", 100, false},
		// The dev chain keeps the state of its last 128 blocks only: the
		// subscription waits, SYNCING, until the fetcher has caught up.
		{"StatePruned", 300, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, testenv.SQLite(t), fetch.Config{BackfillBlocks: 1, Batch: 8})
			d := e.dev
			a := d.Accounts[0]
			e.trackThenDrop(a)
			var moves []string
			for i := range 3 {
				moves = append(moves, e.must(d.Transfer(ctx, 1+i, a, big.NewInt(int64(1000+i)))))
				d.Commit()
			}
			e.fetch()
			// The fetcher falls behind, then the address is subscribed
			// again: the sync runs at the fetcher's block.
			for range c.behind {
				d.Commit()
			}
			moves = append(moves, e.must(d.Transfer(ctx, 2, a, big.NewInt(5000))))
			d.Commit()
			e.subscribe(a)
			e.fetch()
			sub, err := e.db.Subscription(ctx, e.account, chain, addr(a))
			if err != nil {
				t.Fatal(err)
			}
			if waits := sub.State == query.StateSyncing; waits != c.pruned {
				t.Fatalf("after one step far behind: %s, want SYNCING only on the pruned node", sub.State)
			}
			// What the subscription resource shows as its sync_problem.
			reason, since, held := e.f.SyncProblem()
			if held != c.pruned || (c.pruned && (!strings.Contains(reason, "no state") || since.IsZero())) {
				t.Errorf("SyncProblem() = %q since %v, %v; want a reason naming the missing state only on the pruned node", reason, since, held)
			}
			e.catchUp()
			e.fetch()
			if reason, _, held := e.f.SyncProblem(); held {
				t.Errorf("caught up, SyncProblem() still says %q", reason)
			}
			got := byHash(e.txs(a))
			for _, h := range moves {
				if _, ok := got[h]; !ok {
					t.Errorf("transfer %s not listed", h)
				}
			}
			if c.pruned {
				chained(t, e, addr(a))
			} else {
				checkStatement(t, e.db, e.src, e.account, []string{addr(a)})
			}
		})
	}
}

// TestFetchSyncBatch subscribes more addresses at once than a step syncs:
// those left for the next step are not followed before their sync, so
// their list and statement hold each movement once.
func TestFetchSyncBatch(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, testenv.SQLite(t), fetch.Config{SyncBatch: 1, BackfillBlocks: 100})
	d := e.dev
	e.fetch()
	for _, a := range d.Accounts[:3] {
		e.subscribe(a)
	}
	var moves []string
	for i := range 3 {
		moves = append(moves, e.must(d.Transfer(ctx, 3, d.Accounts[i], big.NewInt(int64(100+i)))))
		d.Commit()
	}
	for range 6 {
		e.fetch()
	}
	var addrs []string
	for i, a := range d.Accounts[:3] {
		addrs = append(addrs, addr(a))
		if _, ok := byHash(e.txs(a))[moves[i]]; !ok {
			t.Errorf("%s: transfer %s not listed", addr(a), moves[i])
		}
	}
	checkStatement(t, e.db, e.src, e.account, addrs)
}

// chained checks the native statement of address where the node keeps no
// state for most of its blocks: every row reconciled, each following from
// the one before, and the newest adding up to the node's balance now.
func chained(t *testing.T, e *env, address string) {
	t.Helper()
	ctx := context.Background()
	rows := native(statementOf(t, e.db, e.account, address))
	if len(rows) == 0 {
		t.Fatalf("%s: no statement", address)
	}
	for i, r := range rows {
		if r.Checked && !r.Reconciled {
			t.Errorf("%s block %d: unreconciled, difference %s", address, r.Block, r.Difference)
		}
		if i+1 < len(rows) {
			if before := r.BalanceAfter.Sub(r.Amount); before != rows[i+1].BalanceAfter {
				t.Errorf("%s block %d starts from %s, the row before ends at %s", address, r.Block, before, rows[i+1].BalanceAfter)
			}
		}
	}
	cp, _, err := e.db.Checkpoint(ctx, chain)
	if err != nil {
		t.Fatal(err)
	}
	bals, err := e.src.Balances(ctx, cp.Number, []query.BalanceQuery{{Address: address}})
	if err != nil || len(bals) != 1 {
		t.Fatalf("balance at %d: %v %v", cp.Number, bals, err)
	}
	if bals[0].Amount != rows[0].BalanceAfter {
		t.Errorf("%s: the statement ends at %s, the node says %s at block %d", address, rows[0].BalanceAfter, bals[0].Amount, cp.Number)
	}
}
