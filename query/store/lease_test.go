package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

const ttl = time.Minute

func acquire(t *testing.T, db *store.DB, holder string) (query.Lease, bool) {
	t.Helper()
	l, held, err := db.AcquireLease(context.Background(), "ETH", holder, ttl)
	if err != nil {
		t.Fatalf("AcquireLease(%s): %v", holder, err)
	}
	return l, held
}

// putNative writes a balance of addrA as the holder of l would.
func putNative(ctx context.Context, db *store.DB, amount int64, block uint64) error {
	return db.PutBalances(ctx, []query.Balance{{Chain: "ETH", Address: addrA, Asset: query.AssetNative,
		Symbol: "ETH", Decimals: 18, Amount: query.AmountOf(amount), Block: block}})
}

func TestLease(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		a, b := open(t, dsn), open(t, dsn) // two replicas

		la, held := acquire(t, a, "a:1")
		if !held || la.Generation != 1 || la.Holder != "a:1" || la.Left <= 0 || la.Left > ttl {
			t.Fatalf("first AcquireLease = %+v, held %v", la, held)
		}
		lb, held := acquire(t, b, "b:2")
		if held || lb.Holder != "a:1" || lb.Generation != 1 || lb.Left <= 0 {
			t.Fatalf("AcquireLease while a holds it = %+v, held %v; want a's lease", lb, held)
		}
		if _, _, err := a.AcquireLease(ctx, "SEP", "b:2", ttl); err != nil {
			t.Fatal(err)
		}
		if l, err := b.ChainLease(ctx, "SEP"); err != nil || l.Holder != "b:2" {
			t.Fatalf("other chains are independent: %+v, %v", l, err)
		}
		if _, err := b.ChainLease(ctx, "TST"); !errors.Is(err, query.ErrNotFound) {
			t.Fatalf("ChainLease of a chain never led = %v, want ErrNotFound", err)
		}

		// The holder writes and renews; the renewal records the node's head.
		aCtx := query.WithLease(ctx, la)
		if err := putNative(aCtx, a, 1, 1); err != nil {
			t.Fatalf("a write under a held lease: %v", err)
		}
		if l, err := a.RenewLease(ctx, la, ttl, query.LeaderReport{Head: 42}); err != nil || l.Head != 42 || l.Left <= ttl-10*time.Second {
			t.Fatalf("RenewLease = %+v, %v", l, err)
		}
		if l, _ := b.ChainLease(ctx, "ETH"); l.Head != 42 || l.Holder != "a:1" {
			t.Fatalf("ChainLease after renewal = %+v", l)
		}

		// a stops renewing (frozen): its lease lapses, b takes over.
		if err := a.ExpireLease(ctx, "ETH"); err != nil {
			t.Fatal(err)
		}
		if err := putNative(aCtx, a, 2, 2); !errors.Is(err, query.ErrLeaseLost) {
			t.Fatalf("a write under an expired lease = %v, want ErrLeaseLost", err)
		}
		lb, held = acquire(t, b, "b:2")
		if !held || lb.Generation != 2 || lb.Holder != "b:2" {
			t.Fatalf("AcquireLease after the lapse = %+v, held %v", lb, held)
		}
		// a resumes: it can neither write nor renew (fencing).
		if err := putNative(aCtx, a, 3, 3); !errors.Is(err, query.ErrLeaseLost) {
			t.Fatalf("the old holder's write = %v, want ErrLeaseLost", err)
		}
		if err := a.StoreBlock(aCtx, "ETH", block(3), nil, nil); !errors.Is(err, query.ErrLeaseLost) {
			t.Fatalf("the old holder's StoreBlock = %v, want ErrLeaseLost", err)
		}
		if _, err := a.RenewLease(ctx, la, ttl, query.LeaderReport{}); !errors.Is(err, query.ErrLeaseLost) {
			t.Fatalf("the old holder's renewal = %v, want ErrLeaseLost", err)
		}
		if err := a.ReleaseLease(ctx, la); err != nil {
			t.Fatal(err)
		}
		if l, _ := a.ChainLease(ctx, "ETH"); l.Holder != "b:2" || l.Left <= 0 {
			t.Fatalf("the old holder's release ended the new lease: %+v", l)
		}
		if _, ok, _ := a.Checkpoint(ctx, "ETH"); ok {
			t.Fatal("the old holder's StoreBlock moved the checkpoint")
		}
		if err := putNative(query.WithLease(ctx, lb), b, 4, 4); err != nil {
			t.Fatalf("the new holder's write: %v", err)
		}
		got, err := a.Balances(ctx, "ETH", addrA)
		if err != nil || len(got) != 1 || got[0].Amount != query.AmountOf(4) {
			t.Fatalf("balances %+v, %v; want the new holder's 4 only", got, err)
		}

		// Released, the lease is free at once.
		if err := b.ReleaseLease(ctx, lb); err != nil {
			t.Fatal(err)
		}
		if l, held := acquire(t, a, "a:1"); !held || l.Generation != 3 {
			t.Fatalf("AcquireLease after release = %+v, held %v", l, held)
		}
	})
}

// TestLeaseAcquiredOnce: replicas racing for a free lease get it once.
func TestLeaseAcquiredOnce(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		const n = 8
		dbs := make([]*store.DB, n)
		for i := range dbs {
			dbs[i] = open(t, dsn)
		}
		for round := range 3 {
			var wg sync.WaitGroup
			var won atomic.Int64
			for i, db := range dbs {
				wg.Go(func() {
					_, held, err := db.AcquireLease(context.Background(), "ETH", fmt.Sprint("r:", i), ttl)
					if err != nil {
						t.Errorf("AcquireLease: %v", err)
					}
					if held {
						won.Add(1)
					}
				})
			}
			wg.Wait()
			if won.Load() != 1 {
				t.Fatalf("round %d: %d replicas hold the lease, want 1", round, won.Load())
			}
			if err := dbs[0].ExpireLease(context.Background(), "ETH"); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestLeaseFrozenInTransaction: a holder frozen in the middle of a write
// transaction (which locks the lease row) does not keep the next holder
// out: PostgreSQL ends its session when its lease runs out, another
// replica takes the lease, and the frozen transaction commits nothing.
func TestLeaseFrozenInTransaction(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	a, b := open(t, dsn), open(t, dsn)
	const short = time.Second
	l, held, err := a.AcquireLease(ctx, "ETH", "a:1", short)
	if err != nil || !held {
		t.Fatalf("AcquireLease: %v, %v", held, err)
	}
	opened, release := make(chan struct{}), make(chan struct{})
	held2 := make(chan error, 1)
	go func() { held2 <- a.HoldTx(query.WithLease(ctx, l), opened, release) }()
	<-opened
	start := time.Now()
	for {
		lb, held, err := b.AcquireLease(ctx, "ETH", "b:2", ttl)
		if err != nil {
			t.Fatalf("AcquireLease while a is frozen in a transaction: %v", err)
		}
		if held {
			if lb.Generation != 2 {
				t.Fatalf("b's lease %+v, want generation 2", lb)
			}
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatal("b did not take the lease within 30 s: a's open transaction holds it")
		}
	}
	t.Logf("b took the lease %s after a froze in a transaction (lease of %s)", time.Since(start).Round(10*time.Millisecond), short)
	close(release)
	if err := <-held2; err == nil {
		t.Fatal("the frozen transaction committed after its lease was taken")
	}
}
