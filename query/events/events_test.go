package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/events"
)

func TestCursor(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	for range 1000 {
		acct, pos := rng.Int64N(1<<40), rng.Int64N(1<<50)
		c := events.Cursor(acct, pos)
		if got, err := events.ParseCursor(acct, c); err != nil || got != pos {
			t.Fatalf("seed %d: ParseCursor(%d, Cursor(%d, %d)) = %d, %v", seed, acct, acct, pos, got, err)
		}
		if _, err := events.ParseCursor(acct+1, c); !errors.Is(err, events.ErrOtherCursor) {
			t.Fatalf("seed %d: a cursor of account %d read by %d: %v", seed, acct, acct+1, err)
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
