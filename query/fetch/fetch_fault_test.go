package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/fetch"
)

func (e *env) counter(name string) float64 {
	e.t.Helper()
	return testutil.ToFloat64(metric(e.t, e.reg, name))
}

// native keeps the rows of the native coin.
func native(rows []query.BalanceChange) []query.BalanceChange {
	var out []query.BalanceChange
	for _, r := range rows {
		if r.Contract == "" {
			out = append(out, r)
		}
	}
	return out
}

// sinceGenesis returns a statement that starts at block 0 without its
// oldest row, which must be the genesis allocation.
func sinceGenesis(t *testing.T, rows []query.BalanceChange) []query.BalanceChange {
	t.Helper()
	n := len(rows)
	if n == 0 || rows[n-1].Block != 0 || len(rows[n-1].Causes) != 1 || rows[n-1].Causes[0].Kind != query.KindGenesis {
		t.Fatalf("statement %+v does not start with the genesis allocation", rows)
	}
	return rows[:n-1]
}

func gweis(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), big.NewInt(1e9)) }

// TestFetchNoTraceAPI: a node without any trace API is said at start (the
// log, Traces for /healthz), refused under --traces on, and the rows of
// a payout it cannot see say traced: false and reconciled: false with
// the wei unexplained, never a silent gap.
func TestFetchNoTraceAPI(t *testing.T) {
	ctx := context.Background()
	// Balances are refreshed at every step: the payout touches no
	// transaction of a2's, so only a reading of its balance can see it.
	e := newEnv(t, testenv.SQLite(t), fetch.Config{RefreshInterval: time.Nanosecond})
	d := e.dev
	e.useSource(noTraces{e.src}, fetch.InternalsOn)
	if err := e.f.Probe(ctx); err == nil || !strings.Contains(err.Error(), "no trace API") {
		t.Fatalf("probe with traces on: %v, want the node's lack of a trace API", err)
	}
	log := e.useSource(noTraces{e.src}, fetch.InternalsAuto)
	if err := e.f.Probe(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.f.InternalsSource(); got != "none" {
		t.Errorf("Traces() = %q, want none", got)
	}
	if !strings.Contains(log.String(), "no trace API") || !strings.Contains(log.String(), "not covered") {
		t.Errorf("start log does not say internal transfers are not covered:\n%s", log)
	}
	a2 := d.Accounts[2]
	e.subscribe(a2)
	e.catchUp()
	e.mine(e.must(d.Forward(ctx, 0, []common.Address{a2}, gweis(13))))
	e.catchUp()
	e.fetch() // caught up: the refresh
	rows := sinceGenesis(t, native(statementOf(t, e.db, e.account, addr(a2))))
	if len(rows) != 1 {
		t.Fatalf("statement of %s: %+v, want one row", a2.Hex(), rows)
	}
	r := rows[0]
	if r.Internals || r.Reconciled || r.Difference != query.AmountFromBig(gweis(13)) || r.Amount != query.AmountFromBig(gweis(13)) || len(r.Causes) != 0 {
		t.Errorf("row = %+v, want traced false, reconciled false, difference and amount %s, no cause", r, gweis(13))
	}
	if got := e.counter("addrd_fetch_unreconciled_total"); got != 1 {
		t.Errorf("unreconciled_total = %v, want 1", got)
	}
}

// TestFetchTraceFails: a trace call that errors or times out on a block
// fails the step (the loop retries it with backoff); the checkpoint
// stays below that block until its trace succeeds; nothing is skipped.
func TestFetchTraceFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"Error", fmt.Errorf("debug_traceBlockByNumber: %w: execution timeout", query.ErrUnavailable)},
		{"Timeout", fmt.Errorf("debug_traceBlockByNumber: %w: %w", query.ErrUnavailable, context.DeadlineExceeded)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, testenv.SQLite(t), fetch.Config{})
			d := e.dev
			src := e.fault
			e.useSource(src, fetch.InternalsOn)
			a2 := d.Accounts[2]
			e.subscribe(a2)
			e.catchUp()
			e.mine(e.must(d.Forward(ctx, 0, []common.Address{a2}, gweis(13))))
			bad, _ := d.Head()
			failures := 0
			src.mu.Lock()
			src.traces = func(ctx context.Context, b query.SourceBlock, api string) ([]query.InternalMove, error) {
				if b.Number == bad && failures < 3 {
					failures++
					return nil, tc.err
				}
				return src.Source.Traces(ctx, b, api)
			}
			src.mu.Unlock()
			for i := range 3 {
				err := e.f.FetchOnce(ctx)
				if !errors.Is(err, query.ErrUnavailable) {
					t.Fatalf("step %d: %v, want the trace's error", i, err)
				}
				if cp, _, _ := e.db.Checkpoint(ctx, chain); cp.Number >= bad {
					t.Fatalf("step %d: checkpoint %d passed block %d, whose trace failed", i, cp.Number, bad)
				}
			}
			if got := e.counter("addrd_fetch_trace_errors_total"); got != 3 {
				t.Errorf("trace_errors_total = %v, want 3", got)
			}
			if err := e.f.Health(); err == nil {
				t.Error("Health() = nil while the trace fails")
			}
			e.catchUp()
			checkStatement(t, e.db, e.src, e.account, []string{addr(a2)})
			if rows := sinceGenesis(t, native(statementOf(t, e.db, e.account, addr(a2)))); len(rows) != 1 || rows[0].Causes[0].Kind != query.KindInternal {
				t.Errorf("statement %+v, want the internal payout", rows)
			}
		})
	}
}

// TestFetchReorgBetweenReadAndTrace: the chain moves between reading a
// block and tracing it; the trace is of another block (its transactions
// differ), so the block is not stored but read again: what is stored is
// the new chain's, without a rewind (a fetcher that stored the old block
// with the new block's trace would find the reorg only later, and
// rewind).
func TestFetchReorgBetweenReadAndTrace(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, testenv.SQLite(t), fetch.Config{})
	d := e.dev
	src := e.fault
	a1, a2 := d.Accounts[1], d.Accounts[2]
	e.subscribe(a1)
	e.subscribe(a2)
	e.catchUp()
	parent, parentHash := d.Head()
	e.mine(e.must(d.Forward(ctx, 0, []common.Address{a2}, gweis(13))))
	var once sync.Once
	var forkErr error
	log := e.useSource(src, fetch.InternalsOn)
	src.mu.Lock()
	src.traces = func(ctx context.Context, b query.SourceBlock, api string) ([]query.InternalMove, error) {
		if b.Number == parent+1 {
			once.Do(func() {
				// The chain moves: block parent+1 is replaced by one that
				// pays a1 instead.
				if forkErr = d.Fork(parentHash); forkErr != nil {
					return
				}
				if _, forkErr = d.Forward(ctx, 3, []common.Address{a1}, gweis(7)); forkErr != nil {
					return
				}
				d.Commit()
				d.Commit()
			})
		}
		return src.Source.Traces(ctx, b, api)
	}
	src.mu.Unlock()
	for range 10 {
		e.fetch()
	}
	if forkErr != nil {
		t.Fatal(forkErr)
	}
	e.catchUp()
	if !strings.Contains(log.String(), "replaced while reading") {
		t.Errorf("the replaced block was not noticed:\n%s", log)
	}
	if got := e.counter("addrd_fetch_reorgs_total"); got != 0 {
		t.Errorf("reorgs_total = %v, want 0: the replaced block was stored", got)
	}
	checkStatement(t, e.db, e.src, e.account, []string{addr(a1), addr(a2)})
	var paid bool
	for _, r := range native(statementOf(t, e.db, e.account, addr(a1))) {
		paid = paid || r.Amount == query.AmountFromBig(gweis(7))
	}
	if !paid {
		t.Errorf("statement of %s lacks the new chain's payout of %s", a1.Hex(), gweis(7))
	}
}

// TestFetchTokenWithoutTransferLog: a token balance that changes with no
// Transfer log (a rebasing token) is flagged: reconciled false with the
// difference, counted, and logged once.
func TestFetchTokenWithoutTransferLog(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, testenv.SQLite(t), fetch.Config{})
	d := e.dev
	src := e.fault
	log := e.useSource(src, fetch.InternalsOn)
	a0 := d.Accounts[0]
	e.subscribe(a0)
	e.catchUp()
	e.mine(e.must(d.TransferToken(ctx, 1, a0, big.NewInt(5)))) // the token's statement starts
	e.catchUp()
	from, _ := d.Head()
	token := addr(d.Token)
	// From the next block on, the token says a0 holds 1000 more than its
	// Transfer logs tell.
	src.mu.Lock()
	src.balances = func(ctx context.Context, at uint64, qs []query.BalanceQuery) ([]query.Balance, error) {
		bals, err := src.Source.Balances(ctx, at, qs)
		for i := range bals {
			if bals[i].Contract == token && bals[i].Address == addr(a0) && at > from {
				bals[i].Amount = bals[i].Amount.Add(query.AmountOf(1000))
			}
		}
		return bals, err
	}
	src.mu.Unlock()
	for range 2 {
		e.mine(e.must(d.Transfer(ctx, 0, d.Accounts[1], big.NewInt(1)))) // touches a0: its balances are read
		e.catchUp()
	}
	var flagged []query.BalanceChange
	for _, r := range statementOf(t, e.db, e.account, addr(a0)) {
		if r.Checked && !r.Reconciled {
			flagged = append(flagged, r)
		}
	}
	if len(flagged) != 1 || flagged[0].Contract != token || flagged[0].Difference != query.AmountOf(1000) || flagged[0].Amount != query.AmountOf(1000) {
		t.Fatalf("unreconciled rows %+v, want one of the token with difference 1000", flagged)
	}
	if got := e.counter("addrd_fetch_unreconciled_total"); got != 1 {
		t.Errorf("unreconciled_total = %v, want 1", got)
	}
	if n := strings.Count(log.String(), "does not reconcile"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, log)
	}
}

// TestFetchDifferenceInBusyBlock: a difference found at the head lands on
// the row of its block even when other rows of that block follow it (issue
// 21, H1: the statement kept a pointer to the row, appended the next
// address's row to the same slice, and after the slice grew the
// reconciliation wrote into the old array: the stored row said
// reconciled: true, difference 0, with the wrong balance_after).
func TestFetchDifferenceInBusyBlock(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, testenv.SQLite(t), fetch.Config{})
	d := e.dev
	src := e.fault
	e.useSource(src, fetch.InternalsOn)
	a0, a1 := d.Accounts[0], d.Accounts[1]
	e.subscribe(a0)
	e.subscribe(a1)
	e.catchUp()
	from, _ := d.Head()
	// From the next block on, the node says a0 holds 1000 wei more than
	// its movements tell.
	src.mu.Lock()
	src.balances = func(ctx context.Context, at uint64, qs []query.BalanceQuery) ([]query.Balance, error) {
		bals, err := src.Source.Balances(ctx, at, qs)
		for i := range bals {
			if bals[i].Contract == "" && bals[i].Address == addr(a0) && at > from {
				bals[i].Amount = bals[i].Amount.Add(query.AmountOf(1000))
			}
		}
		return bals, err
	}
	src.mu.Unlock()
	// One transaction moves both: a0's row (its fee comes first), then a1's.
	e.mine(e.must(d.Transfer(ctx, 0, a1, big.NewInt(5))))
	e.catchUp()
	at, _ := d.Head()
	want, err := src.Balances(ctx, at, []query.BalanceQuery{{Address: addr(a0)}})
	if err != nil {
		t.Fatal(err)
	}
	var row *query.BalanceChange
	for _, r := range native(statementOf(t, e.db, e.account, addr(a0))) {
		if r.Block == at {
			row = &r
		}
	}
	switch {
	case row == nil:
		t.Fatalf("no row of %s at block %d", addr(a0), at)
	case row.Reconciled || row.Difference != query.AmountOf(1000) || row.BalanceAfter != want[0].Amount:
		t.Errorf("row at block %d: reconciled %v, difference %q, balance_after %s; want false, 1000, %s",
			at, row.Reconciled, row.Difference, row.BalanceAfter, want[0].Amount)
	}
	for _, r := range native(statementOf(t, e.db, e.account, addr(a1))) {
		if r.Block == at && r.Checked && !r.Reconciled {
			t.Errorf("a1's row at block %d: %+v, want reconciled", at, r)
		}
	}
}

// TestFetchDifferenceLocated: the balances of a batch are
// read at its last block only; a difference that appears at an earlier
// block of the batch lands on the row of that block (checked, not
// reconciled, with the difference), and the rows after it chain from the
// node's balance there. Before, it went on the batch's last block, a
// block where nothing of the kind happened. a0's native balance gains
// 1000 wei from the second of four blocks fetched together (every block
// touches a0); its token balance, which last moved in an earlier batch,
// gains 7 from the same block, where the token did not move: that row is
// the difference alone.
func TestFetchDifferenceLocated(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, testenv.SQLite(t), fetch.Config{})
	d := e.dev
	src := e.fault
	e.useSource(src, fetch.InternalsOn)
	a0 := d.Accounts[0]
	token := addr(d.Token)
	e.subscribe(a0)
	e.catchUp()
	e.mine(e.must(d.TransferToken(ctx, 1, a0, big.NewInt(5)))) // the token's statement starts
	e.catchUp()
	from, _ := d.Head()
	src.mu.Lock()
	src.balances = func(ctx context.Context, at uint64, qs []query.BalanceQuery) ([]query.Balance, error) {
		bals, err := src.Source.Balances(ctx, at, qs)
		for i := range bals {
			if bals[i].Address != addr(a0) || at < from+2 {
				continue
			}
			switch bals[i].Contract {
			case "":
				bals[i].Amount = bals[i].Amount.Add(query.AmountOf(1000))
			case token:
				bals[i].Amount = bals[i].Amount.Add(query.AmountOf(7))
			}
		}
		return bals, err
	}
	src.mu.Unlock()
	for range 4 { // four blocks, one fetch
		e.mine(e.must(d.Transfer(ctx, 0, d.Accounts[1], big.NewInt(1))))
	}
	e.catchUp()
	var flagged []query.BalanceChange
	for _, r := range statementOf(t, e.db, e.account, addr(a0)) {
		if r.Checked && !r.Reconciled {
			flagged = append(flagged, r)
		}
		if r.Block == from+4 && r.Contract == "" && !(r.Checked && r.Reconciled) {
			t.Errorf("the batch's last row %+v: want checked and reconciled", r)
		}
	}
	want := map[string]query.Amount{"": query.AmountOf(1000), token: query.AmountOf(7)}
	if len(flagged) != 2 {
		t.Fatalf("unreconciled rows %+v, want two at block %d", flagged, from+2)
	}
	for _, r := range flagged {
		if r.Block != from+2 || r.Difference != want[r.Contract] {
			t.Errorf("unreconciled row %+v: want block %d, difference %s", r, from+2, want[r.Contract])
		}
		if r.Contract == token && (r.Amount != want[token] || len(r.Causes) != 0) {
			t.Errorf("token row %+v: want the difference alone", r)
		}
		node, err := src.Balances(ctx, r.Block, []query.BalanceQuery{{Address: addr(a0), Contract: r.Contract}})
		if err != nil {
			t.Fatal(err)
		}
		if r.BalanceAfter != node[0].Amount {
			t.Errorf("row %+v: balance_after %s, the node %s", r, r.BalanceAfter, node[0].Amount)
		}
	}
	if got := e.counter("addrd_fetch_unreconciled_total"); got != 2 {
		t.Errorf("unreconciled_total = %v, want 2", got)
	}
}

// TestUntracedChanges: without traces, a change of a
// native balance that no movement explains is found at its block, and
// the rows there say so, checked, whether the blocks are fetched (four
// blocks in one fetch, the subject subscribed: an account) or backfilled
// (the subject subscribed after them: the token contract, whose every
// block's transactions the backfill reads). The node says the subject
// held 1000 wei more at some of four blocks; a block touches the subject
// (the account sends, or a token transfer calls the contract) or not (an
// ether transfer between two others).
//
//   - undone: 1000 wei appear at the second block and are gone at the
//     third, with every block touching the subject: the native balance
//     of each address a block touches is read at that block, so the
//     readings around the change disagree where it happened.
//   - between readings: 1000 wei appear at the first block and leave at
//     the third, the only one touching the subject (a contract funded by
//     an internal call, then self-destructing, leaves the readings at the
//     batch's ends agreeing): the balance is read before and after each
//     block touching the subject, so the change lands where it appeared
//     and where it went.
//
// Each wants exactly the rows in want, by block after the start, with
// their differences (0 for a row that agrees).
func TestUntracedChanges(t *testing.T) {
	tests := []struct {
		name     string
		backfill bool
		more     []uint64 // blocks (1–4) where the node says the subject held 1000 wei more
		touches  func(i int) bool
		want     map[uint64]int64
	}{
		{"fetch undone", false, []uint64{2}, func(int) bool { return true }, map[uint64]int64{1: 0, 2: 1000, 3: -1000, 4: 0}},
		{"backfill undone", true, []uint64{2}, func(int) bool { return true }, map[uint64]int64{2: 1000, 3: -1000}},
		{"fetch between readings", false, []uint64{1, 2}, func(i int) bool { return i == 3 }, map[uint64]int64{1: 1000, 3: -1000}},
		{"backfill between readings", true, []uint64{1, 2}, func(i int) bool { return i == 3 }, map[uint64]int64{1: 1000, 3: -1000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := fetch.Config{}
			if tt.backfill {
				cfg.BackfillBlocks = 1000
			}
			e := newEnv(t, testenv.SQLite(t), cfg)
			d := e.dev
			e.useSource(e.fault, fetch.InternalsOff)
			subject := d.Accounts[0]
			touch := func() (common.Hash, error) { return d.Transfer(ctx, 0, d.Accounts[2], big.NewInt(1)) }
			if tt.backfill {
				subject = d.Token // not subscribed yet: the backfill reads these blocks
				touch = func() (common.Hash, error) { return d.TransferToken(ctx, 1, d.Accounts[2], big.NewInt(1)) }
			} else {
				e.subscribe(subject)
			}
			e.catchUp()
			from, _ := d.Head()
			var more []uint64
			for _, b := range tt.more {
				more = append(more, from+b)
			}
			e.fault.addNative(addr(subject), query.AmountOf(1000), more...)
			for i := 1; i <= 4; i++ {
				if tt.touches(i) {
					e.mine(e.must(touch()))
				} else {
					e.mine(e.must(d.Transfer(ctx, 1, d.Accounts[2], big.NewInt(1))))
				}
				if tt.backfill {
					e.catchUp()
				}
			}
			if tt.backfill {
				e.subscribe(subject)
				e.catchUp()
			}
			e.catchUp()
			got, want := make(map[uint64]query.Amount), make(map[uint64]query.Amount)
			for b, d := range tt.want {
				want[b] = query.AmountOf(d)
			}
			for _, r := range native(statementOf(t, e.db, e.account, addr(subject))) {
				if r.Block > from && r.Block <= from+4 {
					if !r.Checked {
						t.Errorf("row %+v: want checked", r)
					}
					got[r.Block-from] = r.Difference
				}
			}
			if !maps.Equal(got, want) {
				t.Errorf("rows by block after %d: differences %v, want %v", from, got, want)
			}
		})
	}
}
