package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// covered marks addresses synced and backfilled from block 0.
func covered(t *testing.T, db *store.DB, addresses ...string) {
	t.Helper()
	ctx := context.Background()
	if err := db.MarkSynced(ctx, "ETH", addresses, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := db.StoreBackfill(ctx, "ETH", query.BackfillJob{Addresses: addresses, Low: 0, Next: 0}, nil, nil, -1); err != nil {
		t.Fatal(err)
	}
}

// TestCoverage walks a subscription through its states: SYNCING with
// nothing covered, then covered from the sync on, growing down as the
// backfill stores, ACTIVE when it ends; reads list exactly the covered
// range, never a transaction stored earlier for another requester.
func TestCoverage(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, _ *testenv.Clock) {
		ctx := context.Background()
		alice := newKey(t, db, "alice")
		bob := newKey(t, db, "bob")
		// Bob tracked B from block 1: transactions between A and B are stored.
		db.Subscribe(ctx, bob.AccountID, "ETH", addrB)
		covered(t, db, addrB)
		var stored []query.Transaction
		for n := uint64(1); n <= 12; n++ {
			stored = append(stored, tx(n, 0, addrA, addrB))
		}
		if err := db.PutTransactions(ctx, "ETH", stored); err != nil {
			t.Fatal(err)
		}
		blocks := func() []uint64 {
			t.Helper()
			txs, err := db.AccountTransactions(ctx, alice.AccountID, "ETH", addrA, nil, 100)
			if err != nil {
				t.Fatal(err)
			}
			var out []uint64
			for _, tx := range txs {
				out = append(out, tx.BlockNumber)
			}
			slices.Sort(out)
			return out
		}
		state := func(wantState string, wantStart uint64, wantCovered bool) {
			t.Helper()
			sub, err := db.Subscription(ctx, alice.AccountID, "ETH", addrA)
			if err != nil {
				t.Fatal(err)
			}
			if sub.State != wantState || sub.Covered != wantCovered || sub.HistoryStart != wantStart {
				t.Fatalf("subscription %+v, want %s from %d (covered %v)", sub, wantState, wantStart, wantCovered)
			}
		}
		if _, err := db.Subscription(ctx, alice.AccountID, "ETH", addrA); !errors.Is(err, query.ErrNotSubscribed) {
			t.Fatalf("Subscription before subscribing: %v, want ErrNotSubscribed", err)
		}
		db.Subscribe(ctx, alice.AccountID, "ETH", addrA)
		state(query.StateSyncing, 0, false)
		if got := blocks(); len(got) != 0 {
			t.Fatalf("before the sync alice sees blocks %v, stored for bob", got)
		}
		// Synced at 10, owed a backfill from 5.
		if err := db.MarkSynced(ctx, "ETH", []string{addrA}, 10, 5); err != nil {
			t.Fatal(err)
		}
		state(query.StateSyncing, 11, true)
		if got, want := blocks(), []uint64{11, 12}; !slices.Equal(got, want) {
			t.Fatalf("synced: blocks %v, want %v", got, want)
		}
		jobs, err := db.Backfills(ctx, "ETH")
		if err != nil {
			t.Fatal(err)
		}
		job := query.BackfillJob{Addresses: []string{addrA}, Low: 5, Next: 10}
		if len(jobs) != 1 || !slices.Equal(jobs[0].Addresses, job.Addresses) || jobs[0].Low != 5 || jobs[0].Next != 10 {
			t.Fatalf("Backfills = %+v, want %+v", jobs, job)
		}
		if err := db.StoreBackfill(ctx, "ETH", job, stored[7:10], nil, 7); err != nil {
			t.Fatal(err)
		}
		state(query.StateSyncing, 8, true)
		if got, want := blocks(), []uint64{8, 9, 10, 11, 12}; !slices.Equal(got, want) {
			t.Fatalf("half backfilled: blocks %v, want %v", got, want)
		}
		// A stale job (its position moved on) changes nothing.
		if err := db.StoreBackfill(ctx, "ETH", job, nil, nil, 2); err != nil {
			t.Fatal(err)
		}
		state(query.StateSyncing, 8, true)
		job.Next = 7
		if err := db.StoreBackfill(ctx, "ETH", job, stored[4:7], nil, 4); err != nil {
			t.Fatal(err)
		}
		// Backfilled, and SYNCING until its balances are recorded stored.
		state(query.StateSyncing, 5, true)
		if got, err := db.BalancesPending(ctx, "ETH"); err != nil || !slices.Equal(got, []query.Holding{{Address: addrA}, {Address: addrB}}) {
			t.Fatalf("BalancesPending = %v, %v; want A and B (B's backfill ended before)", got, err)
		}
		if err := db.BalancesStored(ctx, "ETH", []string{addrA}, 12); err != nil {
			t.Fatal(err)
		}
		state(query.StateActive, 5, true)
		if got, err := db.BalancesPending(ctx, "ETH"); err != nil || !slices.Equal(got, []query.Holding{{Address: addrB}}) {
			t.Fatalf("BalancesPending after BalancesStored = %v, %v; want B", got, err)
		}
		if got, want := blocks(), []uint64{5, 6, 7, 8, 9, 10, 11, 12}; !slices.Equal(got, want) {
			t.Fatalf("backfilled: blocks %v, want %v", got, want)
		}
		if jobs, _ := db.Backfills(ctx, "ETH"); len(jobs) != 0 {
			t.Fatalf("Backfills after the end = %+v", jobs)
		}
		// Bob's view of B is his own, from block 0.
		txs, err := db.AccountTransactions(ctx, bob.AccountID, "ETH", addrB, nil, 100)
		if err != nil || len(txs) != 12 {
			t.Fatalf("bob: %d transactions, %v; want 12", len(txs), err)
		}
	})
}

// TestBackfillUnsubscribed: a subscription deleted while it syncs drops
// out of the pending backfills; subscribing again resumes from the lower
// start and leaves the covered range as it was.
func TestBackfillUnsubscribed(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, _ *testenv.Clock) {
		ctx := context.Background()
		alice := newKey(t, db, "alice")
		db.Subscribe(ctx, alice.AccountID, "ETH", addrA)
		if err := db.StoreBlock(ctx, "ETH", query.Block{Number: 10, Hash: "0x10"}, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := db.MarkSynced(ctx, "ETH", []string{addrA}, 10, 0); err != nil {
			t.Fatal(err)
		}
		job := query.BackfillJob{Addresses: []string{addrA}, Low: 0, Next: 10}
		if err := db.StoreBackfill(ctx, "ETH", job, nil, nil, 6); err != nil {
			t.Fatal(err)
		}
		if err := db.Unsubscribe(ctx, alice.AccountID, "ETH", addrA); err != nil {
			t.Fatal(err)
		}
		if jobs, _ := db.Backfills(ctx, "ETH"); len(jobs) != 0 {
			t.Fatalf("Backfills after the unsubscription = %+v", jobs)
		}
		// A slice in flight when it left stores nothing of its position.
		job.Next = 6
		if err := db.StoreBackfill(ctx, "ETH", job, nil, nil, 3); err != nil {
			t.Fatal(err)
		}
		if err := db.StoreBlock(ctx, "ETH", query.Block{Number: 20, Hash: "0x20", ParentHash: "0x10"}, nil, nil); err != nil {
			t.Fatal(err)
		}
		db.Subscribe(ctx, alice.AccountID, "ETH", addrA)
		tracked, err := db.Tracked(ctx, "ETH")
		if err != nil || len(tracked) != 1 || !tracked[0].Covered || tracked[0].SyncFrom != 10 {
			t.Fatalf("Tracked = %+v, %v; want A covered, syncing from 10", tracked, err)
		}
		if err := db.MarkSynced(ctx, "ETH", []string{addrA}, 20, tracked[0].SyncFrom); err != nil {
			t.Fatal(err)
		}
		jobs, err := db.Backfills(ctx, "ETH")
		if err != nil || len(jobs) != 1 || jobs[0].Low != 0 || jobs[0].Next != 20 {
			t.Fatalf("Backfills = %+v, %v; want one from 0 to 20", jobs, err)
		}
		sub, err := db.Subscription(ctx, alice.AccountID, "ETH", addrA)
		if err != nil || sub.State != query.StateSyncing || sub.HistoryStart != 7 {
			t.Fatalf("Subscription = %+v, %v; want SYNCING from 7", sub, err)
		}
	})
}

// TestSyncOrder: the addresses owed a sync come in the order they are
// owed it, whatever their spelling: each requester's in the order it
// subscribed them, the requesters round-robin, an address shared in its
// earliest place; the synced ones before them, in address order.
func TestSyncOrder(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		db, err := store.Open(ctx, dsn, store.WithNow(func() time.Time {
			clock = clock.Add(time.Millisecond)
			return clock
		}))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		a, b, c := newKey(t, db, "a"), newKey(t, db, "b"), newKey(t, db, "c")
		addr := func(n int) string { return fmt.Sprintf("0x%040x", n) }
		// Already synced: listed first, by address.
		for _, n := range []int{0x900, 0x100} {
			if _, err := db.Subscribe(ctx, a.AccountID, "ETH", addr(n)); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.MarkSynced(ctx, "ETH", []string{addr(0x900), addr(0x100)}, 10, 11); err != nil {
			t.Fatal(err)
		}
		for _, s := range []struct {
			key  query.APIKey
			addr int
		}{
			{a, 0xfff3}, {a, 0xfff2}, {a, 0xfff1}, // a's bulk, high addresses first
			{b, 0xfffff},                    // then b's one, the highest
			{c, 0x5}, {c, 0xfff2}, {c, 0x4}, // c's, one shared with a
		} {
			if _, err := db.Subscribe(ctx, s.key.AccountID, "ETH", addr(s.addr)); err != nil {
				t.Fatal(err)
			}
		}
		tracked, err := db.Tracked(ctx, "ETH")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tr := range tracked {
			got = append(got, fmt.Sprintf("%s %v", tr.Address, tr.NeedsSync))
		}
		var want []string
		for _, n := range []int{0x100, 0x900} {
			want = append(want, addr(n)+" false")
		}
		for _, n := range []int{0xfff3, 0xfffff, 0x5, 0xfff2, 0xfff1, 0x4} {
			want = append(want, addr(n)+" true")
		}
		if !slices.Equal(got, want) {
			t.Errorf("Tracked:\n got %q\nwant %q", got, want)
		}
	})
}
