package webhook_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/events"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/webhook"
)

// TestWorkersShared: one requester's endpoints that do not answer hold
// at most its share of the workers (a quarter), and another requester's
// endpoint is delivered to meanwhile.
func TestWorkersShared(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		db, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		release := make(chan struct{})
		stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			select { // answers once the test ends
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer stuck.Close()
		defer close(release)
		arrived := make(chan string, 100)
		fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			arrived <- r.Header.Get("webhook-id")
		}))
		defer fast.Close()

		const slowAddr, fastAddr = "0x00000000000000000000000000000000000000aa", "0x00000000000000000000000000000000000000bb"
		slowKey, fastKey := newKeyFor(t, db, "slow"), newKeyFor(t, db, "fast")
		subscribe(t, db, slowKey.AccountID, slowAddr)
		subscribe(t, db, fastKey.AccountID, fastAddr)
		for i := range 8 {
			hook(t, db, slowKey.AccountID, fmt.Sprintf("%s/%d", stuck.URL, i))
		}
		hook(t, db, fastKey.AccountID, fast.URL+"/fast")

		w := events.NewWatcher(db.LastEventID, 20*time.Millisecond)
		db.OnEvents(w.Notify)
		d := webhook.New(webhook.Config{Store: db, Policy: webhook.Policy{AllowHTTP: true, AllowPrivate: true}, Holder: "test",
			Workers: 8, Timeout: time.Minute, Watcher: w})
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); d.Run(runCtx) }()
		defer func() { cancel(); <-done }()

		// The slow requester's event first: its eight endpoints are due
		// before the other's.
		storeChange(t, db, 1, slowAddr)
		storeChange(t, db, 2, fastAddr)
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatal("the fast endpoint got nothing in 10 s: the other requester's endpoints hold every worker")
		}
	})
}

func newKeyFor(t *testing.T, db *store.DB, name string) query.APIKey {
	t.Helper()
	k, _, err := db.CreateAPIKey(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func subscribe(t *testing.T, db *store.DB, account int64, address string) {
	t.Helper()
	if _, err := db.Subscribe(context.Background(), account, "ETH", address); err != nil {
		t.Fatal(err)
	}
}

func hook(t *testing.T, db *store.DB, account int64, url string) {
	t.Helper()
	secret, _ := webhook.NewSecret(rand.Reader)
	if _, err := db.CreateWebhook(context.Background(), query.Webhook{Account: account, URL: url, Secret: secret}); err != nil {
		t.Fatal(err)
	}
}

// storeChange stores block n with a statement row of address.
func storeChange(t *testing.T, db *store.DB, n uint64, address string) {
	t.Helper()
	c := query.BalanceChange{Chain: "ETH", Address: address, Block: n, Amount: query.AmountOf(1), BalanceAfter: query.AmountOf(int64(n))}
	b := query.Block{Number: n, Hash: fmt.Sprintf("0x%d", n), ParentHash: fmt.Sprintf("0x%d", n-1)}
	if err := db.StoreBlocks(context.Background(), "ETH", []query.BlockData{{Block: b, Changes: []query.BalanceChange{c}}}); err != nil {
		t.Fatal(err)
	}
}
