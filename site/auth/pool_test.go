package auth_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/site"
	"github.com/wharfhq/wharf/site/auth"
)

// TestPoolBurst checks a burst of credential checks against a PostgreSQL
// that takes 12 connections: without a pool the burst opens one each and
// some are refused ("too many clients"); with a pool of 4 every check
// waits its turn and succeeds; with a wait too short for the burst the
// checks beyond it fail with ErrBusy, never with the server's refusal.
func TestPoolBurst(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.PostgresLimited(t, 12)
	setup := mustOpen(t, dsn)
	mustOrg(t, setup, "acme", site.LevelFull)
	_, secret, err := setup.CreateAPIKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	setup.Close()
	const burst = 300
	type outcome struct{ ok, busy, refused, other int }
	check := func(t *testing.T, db *auth.DB) outcome {
		var mu sync.Mutex
		var o outcome
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range burst {
			wg.Go(func() {
				<-start
				_, err := db.APIKey(ctx, secret)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					o.ok++
				case errors.Is(err, auth.ErrBusy):
					o.busy++
				case strings.Contains(err.Error(), "too many clients"):
					o.refused++
				default:
					o.other++
					t.Logf("other error: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		return o
	}
	t.Run("Unbounded", func(t *testing.T) {
		db := mustOpen(t, dsn)
		// The control: the burst is big enough to reach the limit.
		o := check(t, db)
		t.Logf("without a pool: %+v", o)
		if o.refused == 0 {
			t.Fatalf("a burst of %d without a pool: %+v; want some refused by the server (the test's burst is too small)", burst, o)
		}
	})
	t.Run("Pool", func(t *testing.T) {
		db := mustOpen(t, dsn)
		db.SetPool(4, time.Minute)
		if o := check(t, db); o.ok != burst {
			t.Errorf("a burst of %d with a pool of 4: %+v; want every check to succeed", burst, o)
		}
	})
	t.Run("ErrBusy", func(t *testing.T) {
		db := mustOpen(t, dsn)
		db.SetPool(1, time.Microsecond)
		o := check(t, db)
		if o.refused != 0 || o.other != 0 || o.busy == 0 {
			t.Errorf("a burst of %d with a pool of 1 and no time to wait: %+v; want ErrBusy for those that found no connection, no other error", burst, o)
		}
	})
}
