package fetch_test

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/events"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/evm/devchain"
	"github.com/wharfhq/wharf/query/evm/devchain/devchaintest"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/webhook"
)

// BenchmarkFetchWebhooks measures what delivering webhooks costs the
// fetcher (the target: blocks/s with webhooks on ≥ 0.9 × off): the chain of
// BenchmarkFetch (-fetch.blocks × -fetch.txs, traces on, SQLite), its 10
// accounts subscribed, fetched with no endpoint and with one endpoint on
// a local receiver taking every statement row's event while the fetcher
// runs, in the order off, on, on, off. Run it with -benchtime=1x.
func BenchmarkFetchWebhooks(b *testing.B) {
	ctx := context.Background()
	dev := devchaintest.Start(b, devchain.Config{Accounts: 10, TxsPerBlock: *benchTxs, Archive: true})
	start, _ := dev.Head()
	for range *benchBlocks {
		if _, err := dev.Step(ctx); err != nil {
			b.Fatal(err)
		}
	}
	end, _ := dev.Head()
	var received atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()

	run := func(hooks bool) (rate float64, delivered, written int64) {
		db := seedSubscriptions(b, testenv.SQLite(b), dev, 10, start)
		defer db.Close()
		src, err := evm.Dial(ctx, dev.URL, evm.SourceConfig{})
		if err != nil {
			b.Fatal(err)
		}
		defer src.Close()
		f, err := fetch.New(fetch.Config{Chain: chain, Store: db, Reader: evm.NewReader(src), Logger: slog.New(slog.DiscardHandler), Internals: fetch.InternalsOn})
		if err != nil {
			b.Fatal(err)
		}
		before := received.Load()
		stop := func() {}
		if hooks {
			var account int64
			if err := db.Bun().NewRaw("SELECT account_id FROM subscriptions LIMIT 1").Scan(ctx, &account); err != nil {
				b.Fatal(err)
			}
			from, _ := db.LastEventID(ctx)
			secret, _ := webhook.NewSecret(rand.Reader)
			if _, err := db.CreateWebhook(ctx, query.Webhook{Account: account, URL: recv.URL + "/hook", Secret: secret, Cursor: from}); err != nil {
				b.Fatal(err)
			}
			w := events.NewWatcher(db.LastEventID, 100*time.Millisecond)
			db.OnEvents(w.Notify)
			d := webhook.New(webhook.Config{Store: db, Policy: webhook.Policy{AllowHTTP: true, AllowPrivate: true}, Holder: "bench", Watcher: w})
			dctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); d.Run(dctx) }()
			stop = func() { cancel(); <-done }
		}
		rate = fetchToEnd(b, f, db, start, end)
		delivered = received.Load() - before
		stop()
		last, _ := db.LastEventID(ctx)
		return rate, delivered, last
	}

	b.ResetTimer()
	off1, _, _ := run(false)
	on1, d1, e1 := run(true)
	on2, d2, e2 := run(true)
	off2, _, _ := run(false)
	b.StopTimer()
	if d1 == 0 || d2 == 0 {
		b.Fatalf("no delivery while fetching (%d, %d of %d, %d events)", d1, d2, e1, e2)
	}
	off, on := (off1+off2)/2, (on1+on2)/2
	b.ReportMetric(off, "blocks/s-off")
	b.ReportMetric(on, "blocks/s-on")
	b.ReportMetric(on/off, "ratio")
	b.Logf("fetch webhooks: %d blocks x %d txs: webhooks off %.1f blocks/s (%.1f, %.1f); on %.1f (%.1f, %.1f; %d and %d deliveries made while fetching, of %d and %d events); ratio %.2f (want >= 0.9)",
		end-start, *benchTxs, off, off1, off2, on, on1, on2, d1, d2, e1, e2, on/off)
}
