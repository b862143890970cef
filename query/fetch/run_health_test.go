package fetch_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
)

// afterClock is a query.Clock whose After fires at once and records the
// waits asked for, but for the long ones of the schedules (the refresh's
// minutes), which never fire.
type afterClock struct {
	mu    sync.Mutex
	waits []time.Duration
	asked chan struct{} // receives once per After
}

func (c *afterClock) Now() time.Time { return time.Now() }

func (c *afterClock) After(d time.Duration) <-chan time.Time {
	if d > 2*time.Minute {
		return nil
	}
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	select {
	case c.asked <- struct{}{}:
	default:
	}
	ch := make(chan time.Time, 1)
	ch <- time.Now()
	return ch
}

// TestBackoffCapped (issue 21, N1): with the node away, the wait between
// failed steps doubles up to a few seconds at most, so that fetching
// resumes within them of the node's return (it had grown to 32 s).
func TestBackoffCapped(t *testing.T) {
	e := newEnv(t, filepath.Join(t.TempDir(), "addrd.db"), fetch.Config{})
	clock := &afterClock{asked: make(chan struct{}, 1)}
	e.cfg.Clock = clock
	e.newFetcher(e.db)
	if err := e.dev.StopHTTP(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.f.Run(ctx) }()
	for {
		<-clock.asked
		clock.mu.Lock()
		n := len(clock.waits)
		clock.mu.Unlock()
		if n >= 12 {
			break
		}
	}
	cancel()
	<-done
	clock.mu.Lock()
	defer clock.mu.Unlock()
	var longest time.Duration
	for _, d := range clock.waits {
		longest = max(longest, d)
	}
	if longest > fetch.DefaultMaxBackoff || fetch.DefaultMaxBackoff > 5*time.Second {
		t.Errorf("waits %v: the longest %s, want at most %s (and that at most 5 s)", clock.waits, longest, fetch.DefaultMaxBackoff)
	}
}

// lostLease is a store whose lease is lost on demand: renewals are
// refused, and no lease is taken again; it says when a lease is asked for
// after that.
type lostLease struct {
	*store.DB
	lost     atomic.Bool
	followed chan struct{}
}

func (s *lostLease) RenewLease(ctx context.Context, l query.Lease, ttl time.Duration, head uint64) (query.Lease, error) {
	if s.lost.Load() {
		return query.Lease{}, query.ErrLeaseLost
	}
	return s.DB.RenewLease(ctx, l, ttl, head)
}

func (s *lostLease) AcquireLease(ctx context.Context, chain, holder string, ttl time.Duration) (query.Lease, bool, error) {
	if s.lost.Load() {
		select {
		case s.followed <- struct{}{}:
		default:
		}
		return query.Lease{}, false, nil
	}
	return s.DB.AcquireLease(ctx, chain, holder, ttl)
}

// TestLostLeaseHealthy (issue 21, L1): a replica whose steps failed and
// which then lost the lease is a follower, healthy: it does not report
// the stale error (or the lost lease) for as long as another leads.
func TestLostLeaseHealthy(t *testing.T) {
	e := newEnv(t, filepath.Join(t.TempDir(), "addrd.db"), fetch.Config{})
	st := &lostLease{DB: e.db, followed: make(chan struct{}, 1)}
	e.cfg.Clock = &afterClock{asked: make(chan struct{}, 1)}
	e.cfg.LeaseTTL = 300 * time.Millisecond
	e.newFetcher(st)
	if err := e.dev.StopHTTP(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); e.f.Run(ctx) }()
	// Readiness: the node is away, so a step fails soon.
	deadline := time.Now().Add(30 * time.Second)
	for e.f.Health() == nil {
		if time.Now().After(deadline) {
			t.Fatal("no failed step in 30 s with the node away")
		}
		time.Sleep(5 * time.Millisecond)
	}
	st.lost.Store(true)
	select {
	case <-st.followed:
	case <-time.After(30 * time.Second):
		t.Fatal("the lease was not given up within 30 s of being lost")
	}
	if err := e.f.Health(); err != nil {
		t.Errorf("Health() = %v on a follower, want nil: the chain's fetching is the leader's to report", err)
	}
	if errors.Is(e.f.Health(), query.ErrLeaseLost) {
		t.Error("a follower reports the lost lease")
	}
	cancel()
	<-done
}
