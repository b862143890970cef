package fetch_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain/chaintest"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
)

// TestBackoffCapped: with the node away, the wait between
// failed steps doubles up to a few seconds at most, so that fetching
// resumes within them of the node's return (it had grown to 32 s).
func TestBackoffCapped(t *testing.T) {
	e := newFakeEnv(t, testenv.SQLite(t), chaintest.FakeConfig{Balances: true}, fetch.Config{})
	clock := testenv.NewClock(time.Now())
	waits := clock.AutoAdvance(t, 2*time.Minute) // the refresh's minutes never end
	e.refetch(e.db, fetch.Config{Clock: clock})
	e.fake.SetDown(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.f.Run(ctx) }()
	for len(waits()) < 12 {
		clock.NextAfter(t, 2*time.Minute)
	}
	cancel()
	<-done
	var longest time.Duration
	for _, d := range waits() {
		longest = max(longest, d)
	}
	if longest > fetch.DefaultMaxBackoff || fetch.DefaultMaxBackoff > 5*time.Second {
		t.Errorf("waits %v: the longest %s, want at most %s (and that at most 5 s)", waits(), longest, fetch.DefaultMaxBackoff)
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

func (s *lostLease) RenewLease(ctx context.Context, l query.Lease, ttl time.Duration, r query.LeaderReport) (query.Lease, error) {
	if s.lost.Load() {
		return query.Lease{}, query.ErrLeaseLost
	}
	return s.DB.RenewLease(ctx, l, ttl, r)
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

// TestLostLeaseHealthy: a replica whose steps failed and
// which then lost the lease is a follower, healthy: it does not report
// the stale error (or the lost lease) for as long as another leads.
func TestLostLeaseHealthy(t *testing.T) {
	e := newFakeEnv(t, testenv.SQLite(t), chaintest.FakeConfig{Balances: true}, fetch.Config{})
	st := &lostLease{DB: e.db, followed: make(chan struct{}, 1)}
	clock := testenv.NewClock(time.Now())
	clock.AutoAdvance(t, 2*time.Minute)
	e.refetch(st, fetch.Config{Clock: clock, LeaseTTL: 300 * time.Millisecond})
	e.fake.SetDown(true)
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

// headLease is a store that says when a renewal records a node head.
type headLease struct {
	*store.DB
	recorded chan uint64
}

func (s *headLease) RenewLease(ctx context.Context, l query.Lease, ttl time.Duration, r query.LeaderReport) (query.Lease, error) {
	nl, err := s.DB.RenewLease(ctx, l, ttl, r)
	if err == nil && r.Head != 0 {
		select {
		case s.recorded <- r.Head:
		default:
		}
	}
	return nl, err
}

// TestLeaseRecordsFirstHead: a new leader records the node's head in the
// lease as soon as it has read it, not a third of the TTL later: until
// then every replica's /healthz said node_head 0 beside a stored head.
func TestLeaseRecordsFirstHead(t *testing.T) {
	e := newFakeEnv(t, testenv.SQLite(t), chaintest.FakeConfig{Balances: true}, fetch.Config{})
	e.fake.Mine(5)
	st := &headLease{DB: e.db, recorded: make(chan uint64, 1)}
	e.refetch(st, fetch.Config{LeaseTTL: 30 * time.Minute}) // the timed renewal: after 10 minutes
	defer e.start()()
	ctx := context.Background()
	select {
	case head := <-st.recorded:
		l, err := e.db.ChainLease(ctx, fakeChain)
		if err != nil || l.Head < head {
			t.Errorf("lease head %d (%v), want at least %d", l.Head, err, head)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("no node head recorded in the lease within 2 minutes of leading (the timed renewal comes after 10)")
	}
}

// refusedLease is a store whose lease writes fail while refuse is set,
// as a database on a full disk refuses them (a disk that is full before
// the first lease, yet leaves the database readable, cannot be arranged
// reliably with a real one: SQLite reuses its write-ahead log's pages).
// Each try is sent on tried, its error with it.
type refusedLease struct {
	*store.DB
	refuse atomic.Bool
	tried  chan error
}

func (s *refusedLease) AcquireLease(ctx context.Context, chain, holder string, ttl time.Duration) (query.Lease, bool, error) {
	l, held, err := query.Lease{}, false, errors.New("store: take the lease: database or disk is full (13)")
	if !s.refuse.Load() {
		l, held, err = s.DB.AcquireLease(ctx, chain, holder, ttl)
	}
	select {
	case s.tried <- err:
	case <-ctx.Done():
	}
	return l, held, err
}

// TestLeaseProblem: a replica that cannot ask for the lease says why
// (LeaseProblem, which /healthz quotes beside "no replica has fetched"),
// and says nothing once it can again.
func TestLeaseProblem(t *testing.T) {
	e := newFakeEnv(t, testenv.SQLite(t), chaintest.FakeConfig{Balances: true}, fetch.Config{})
	st := &refusedLease{DB: e.db, tried: make(chan error)}
	st.refuse.Store(true)
	e.refetch(st, fetch.Config{LeaseTTL: 300 * time.Millisecond})
	stop := e.start()
	defer stop()
	next := func() error {
		t.Helper()
		select {
		case err := <-st.tried:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("no try for the lease in 30 s")
			return nil
		}
	}
	if err := next(); err == nil {
		t.Fatal("the refusing store let the lease be taken")
	}
	// The problem is recorded after the try returns: the next try comes
	// after it.
	next()
	if err := e.f.LeaseProblem(); err == nil || !strings.Contains(err.Error(), "disk is full") {
		t.Fatalf("LeaseProblem() = %v, want the store's refusal", err)
	}
	st.refuse.Store(false)
	for err := next(); err != nil; err = next() {
	}
	// A leader records its try before it stores a block.
	e.waitStored(e.fake.Mine(1).Number, "leading")
	if err := e.f.LeaseProblem(); err != nil {
		t.Errorf("LeaseProblem() = %v once the lease could be taken, want nil", err)
	}
}
