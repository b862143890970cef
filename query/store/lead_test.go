package store_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/store"
)

func openLeader(t *testing.T, dsn string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// waitDone fails the test when ctx is not done within a generous bound;
// it waits for an event, the bound only keeps a broken build from hanging.
func waitDone(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: not within 30 s", what)
	}
}

func TestLeadSQLite(t *testing.T) {
	db := openLeader(t, filepath.Join(t.TempDir(), "addrd.db"))
	lead, release, err := db.Lead(context.Background(), "ETH", time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if lead.Err() != nil {
		t.Fatal("lead ended at once")
	}
	release()
	release() // twice is fine
	waitDone(t, lead, "lead after release")
}

func TestLeadPostgres(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	const retry = 20 * time.Millisecond
	first, second := openLeader(t, dsn), openLeader(t, dsn)

	lead1, release1, err := first.Lead(ctx, "ETH", retry)
	if err != nil {
		t.Fatal(err)
	}
	defer release1()

	t.Run("OtherChainsAreIndependent", func(t *testing.T) {
		lead, release, err := second.Lead(ctx, "SEP", retry)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		if lead.Err() != nil {
			t.Error("lead on another chain ended at once")
		}
	})

	t.Run("FollowerWaits", func(t *testing.T) {
		short, cancel := context.WithTimeout(ctx, 10*retry)
		defer cancel()
		if _, _, err := second.Lead(short, "ETH", retry); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("second Lead while the first leads = %v, want the deadline", err)
		}
	})

	// The second waits for the lead while the first's session dies.
	type result struct {
		lead    context.Context
		release func()
		err     error
	}
	got := make(chan result, 1)
	go func() {
		l, r, err := second.Lead(ctx, "ETH", retry)
		got <- result{l, r, err}
	}()
	admin, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	res, err := admin.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n < 1 {
		t.Fatal("found no session holding an advisory lock; the leader should")
	}
	waitDone(t, lead1, "the first leader noticing its session died")

	var r result
	select {
	case r = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the second did not take over within 30 s")
	}
	if r.err != nil {
		t.Fatalf("second Lead: %v", r.err)
	}
	if r.lead.Err() != nil {
		t.Fatal("the second's lead ended at once")
	}

	// Released, the lead goes back to the first at once.
	r.release()
	lead3, release3, err := first.Lead(ctx, "ETH", retry)
	if err != nil {
		t.Fatal(err)
	}
	defer release3()
	if lead3.Err() != nil {
		t.Error("lead taken back ended at once")
	}
}
