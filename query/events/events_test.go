package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/events"
)

func TestCursor(t *testing.T) {
	rng := testenv.Rand(t, 1)
	for range 1000 {
		acct, pos := rng.Int64N(1<<40), rng.Int64N(1<<50)
		c := events.Cursor(acct, pos)
		if got, err := events.ParseCursor(acct, c); err != nil || got != pos {
			t.Fatalf("ParseCursor(%d, Cursor(%d, %d)) = %d, %v", acct, acct, pos, got, err)
		}
		if _, err := events.ParseCursor(acct+1, c); !errors.Is(err, events.ErrOtherCursor) {
			t.Fatalf("a cursor of account %d read by %d: %v", acct, acct+1, err)
		}
	}
	for _, bad := range []string{"", "x", "AQ", "AgEB", events.Cursor(1, 2) + "A", events.Cursor(1, 2) + "=", "!!!!",
		"AQEBAQ", string(make([]byte, 100))} {
		if _, err := events.ParseCursor(1, bad); !errors.Is(err, events.ErrBadCursor) {
			t.Errorf("ParseCursor(%q) = %v, want ErrBadCursor", bad, err)
		}
	}
}

func FuzzParseCursor(f *testing.F) {
	f.Add(int64(1), events.Cursor(1, 5))
	f.Add(int64(2), "AQEB")
	f.Fuzz(func(t *testing.T, acct int64, s string) {
		pos, err := events.ParseCursor(acct, s)
		if err == nil && events.Cursor(acct, pos) != s {
			t.Fatalf("ParseCursor(%q) = %d, which is %q", s, pos, events.Cursor(acct, pos))
		}
	})
}

func TestAppendJSON(t *testing.T) {
	e := query.Event{ID: 42, Kind: query.EventBalanceChange, Created: time.Date(2026, 3, 1, 12, 0, 0, 5000, time.UTC), Data: `{"a":1}`}
	b := events.AppendJSON(nil, 7, e)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	want := `{"id":"evt_42","type":"balance_change","timestamp":"2026-03-01T12:00:00.000005Z","cursor":"` + events.Cursor(7, 42) + `","data":{"a":1}}`
	if string(b) != want {
		t.Fatalf("AppendJSON = %s\nwant %s", b, want)
	}
}

// TestWatcher: many waiters are woken by one read when the feed grows,
// Notify wakes them before the interval, and a cancelled wait returns.
func TestWatcher(t *testing.T) {
	var last, reads atomic.Int64
	w := events.NewWatcher(func(context.Context) (int64, error) { reads.Add(1); return last.Load(), nil }, time.Hour)
	var wg sync.WaitGroup
	woke := make(chan error, 100)
	for range 100 {
		wg.Go(func() { woke <- w.Wait(context.Background(), 0) })
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Wait(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Wait = %v", err)
	}
	last.Store(3)
	w.Notify() // the interval is an hour: only Notify wakes them
	wg.Wait()
	close(woke)
	for err := range woke {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := reads.Load(); n > 10 {
		t.Fatalf("%d reads for 100 waiters", n)
	}
	if err := w.Wait(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
}

// TestChangeJSON: the data of a balance_change event, written by hand,
// is byte for byte json.Marshal of its ChangeData, for seeded statement
// rows whose strings now and then hold bytes JSON escapes.
func TestChangeJSON(t *testing.T) {
	rng := testenv.Rand(t, 2)
	odd := []string{"", "0xab", `"`, `\`, "<&>", "\x00\n", "é", "\u2028", "\xff"}
	str := func() string { return odd[rng.IntN(len(odd))] + "0x" + odd[rng.IntN(len(odd))] }
	amount := func() query.Amount { return query.AmountOf(rng.Int64() - rng.Int64()) }
	for range 2000 {
		c := query.BalanceChange{Chain: str(), Address: str(), Block: rng.Uint64(), Contract: str(), Amount: amount(), BalanceAfter: amount(),
			Checked: rng.IntN(2) == 0, Reconciled: rng.IntN(2) == 0, Difference: amount(), Internals: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			c.Contract = query.HoldingKey(query.AssetERC1155, str(), "7")
		}
		if rng.IntN(3) > 0 {
			c.Time = time.Unix(rng.Int64N(1<<33), 0)
		}
		for range rng.IntN(4) {
			cs := query.Cause{Kind: str(), TxHash: str(), Amount: amount()}
			if rng.IntN(2) == 0 {
				cs.Kind, cs.Ref = query.KindWithdrawal, query.WithdrawalRef(rng.Uint64(), rng.Uint64())
			} else if rng.IntN(2) == 0 {
				cs.Ref = str() // another family's reference: not written
			}
			if rng.IntN(3) == 0 {
				cs.Fee = &query.FeeParts{Execution: amount(), Blob: amount(), L1: amount(), Operator: amount()}
			}
			c.Causes = append(c.Causes, cs)
		}
		fin := []string{query.FinalityLatest, query.FinalitySafe, query.FinalityFinalized}[rng.IntN(3)]
		want, err := json.Marshal(changeData(c, fin))
		if err != nil {
			t.Fatal(err)
		}
		if got := events.ChangeJSON(c, fin); got != string(want) {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	}
}

// changeData is the ChangeData of c, as json.Marshal writes it.
func changeData(c query.BalanceChange, finality string) events.ChangeData {
	contract, id := query.SplitHoldingKey(c.Contract)
	d := events.ChangeData{Chain: c.Chain, Address: c.Address, BlockNumber: c.Block, Contract: contract, TokenID: id, Amount: c.Amount,
		BalanceAfter: c.BalanceAfter, Causes: make([]events.CauseData, len(c.Causes)), Difference: c.Difference, Internals: c.Internals,
		Finality: finality}
	if !c.Time.IsZero() {
		d.Time = c.Time.UTC().Format(time.RFC3339)
	}
	if c.Checked {
		d.Reconciled = &c.Reconciled
	}
	for i, cs := range c.Causes {
		d.Causes[i] = events.CauseData{Kind: cs.Kind, TxHash: cs.TxHash, Amount: cs.Amount}
		if cs.Kind == query.KindWithdrawal {
			var index, validator uint64
			if _, err := fmt.Sscanf(cs.Ref, "withdrawal:%d:%d", &index, &validator); err == nil {
				d.Causes[i].Withdrawal, d.Causes[i].Validator = &index, &validator
			}
		}
		if p := cs.Fee; p != nil && p.Split() {
			d.Causes[i].FeeParts = &events.FeePartsData{Execution: p.Execution, Blob: p.Blob, L1: p.L1, Operator: p.Operator}
		}
	}
	return d
}
