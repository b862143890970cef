package webhook_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/events"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/webhook"
)

// benchRig is a PostgreSQL store with one requester subscribed to
// addrs addresses, a local receiver counting deliveries by path, and
// the positions' commit times.
type benchRig struct {
	b       *testing.B
	db      *store.DB
	account int64
	addrs   []string
	recv    *httptest.Server
	count   atomic.Int64
	mu      sync.Mutex
	arrived map[string]time.Time // webhook-id of path /0 → first arrival
	block   uint64
}

func newBenchRig(b *testing.B, addrs int) *benchRig {
	ctx := context.Background()
	db, err := store.Open(ctx, testenv.Postgres(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	k, _, _ := db.CreateAPIKey(ctx, "bench")
	r := &benchRig{b: b, db: db, account: k.AccountID, arrived: make(map[string]time.Time)}
	for i := range addrs {
		a := fmt.Sprintf("0x%040x", 0xa0000+i)
		r.addrs = append(r.addrs, a)
		if _, err := db.Subscribe(ctx, k.AccountID, "ETH", a); err != nil {
			b.Fatal(err)
		}
	}
	r.recv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		now := time.Now()
		r.count.Add(1)
		if req.URL.Path == "/0" {
			r.mu.Lock()
			if _, ok := r.arrived[req.Header.Get("webhook-id")]; !ok {
				r.arrived[req.Header.Get("webhook-id")] = now
			}
			r.mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(r.recv.Close)
	return r
}

// write stores the next block with a statement row of each of the first
// n addresses: n events, in one transaction; it returns the commit time
// and the last position.
func (r *benchRig) write(n int) (time.Time, int64) {
	r.block++
	cs := make([]query.BalanceChange, n)
	for i := range n {
		cs[i] = query.BalanceChange{Chain: "ETH", Address: r.addrs[i], Block: r.block, Amount: query.AmountOf(1), BalanceAfter: query.AmountOf(int64(r.block)),
			Causes: []query.Cause{{Kind: "transaction", TxHash: fmt.Sprintf("0x%064x", r.block), Amount: query.AmountOf(1)}}}
	}
	blk := query.Block{Number: r.block, Hash: fmt.Sprintf("0x%d", r.block), ParentHash: fmt.Sprintf("0x%d", r.block-1)}
	if err := r.db.StoreBlocks(context.Background(), "ETH", []query.BlockData{{Block: blk, Changes: cs}}); err != nil {
		r.b.Fatal(err)
	}
	last, _ := r.db.LastEventID(context.Background())
	return time.Now(), last
}

// hooks creates n endpoints at the receiver's paths /0 … /n-1,
// delivering from position from.
func (r *benchRig) hooks(n int, from int64) {
	for i := range n {
		secret, _ := webhook.NewSecret(rand.Reader)
		if _, err := r.db.CreateWebhook(context.Background(), query.Webhook{Account: r.account, URL: fmt.Sprintf("%s/%d", r.recv.URL, i),
			Secret: secret, Cursor: from}); err != nil {
			r.b.Fatal(err)
		}
	}
}

// deliver runs a deliverer until the receiver has want deliveries and
// returns how long that took.
func (r *benchRig) deliver(want int64) time.Duration {
	w := events.NewWatcher(r.db.LastEventID, 100*time.Millisecond)
	r.db.OnEvents(w.Notify)
	d := webhook.New(webhook.Config{Store: r.db, Policy: webhook.Policy{AllowHTTP: true, AllowPrivate: true}, Holder: "bench", Watcher: w})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	start := time.Now()
	go func() { defer close(done); d.Run(ctx) }()
	for r.count.Load() < want {
		if time.Since(start) > 5*time.Minute {
			r.b.Fatalf("%d of %d deliveries in 5 minutes", r.count.Load(), want)
		}
		time.Sleep(5 * time.Millisecond) // a benchmark's polling of its outcome
	}
	took := time.Since(start)
	cancel()
	<-done
	return took
}

// bare posts n event-sized signed bodies to urls (round robin) with
// workers goroutines, each in order, and returns the rate: the
// reference of a delivery, HTTP and nothing else.
func bare(b *testing.B, urls []string, n, workers int) float64 {
	client := webhook.Policy{AllowHTTP: true, AllowPrivate: true}.Client(10 * time.Second)
	body := events.AppendJSON(nil, 1, query.Event{ID: 1, Kind: query.EventBalanceChange, Created: time.Now(),
		Data: events.ChangeJSON(query.BalanceChange{Chain: "ETH", Address: fmt.Sprintf("0x%040x", 1), Block: 1, Amount: query.AmountOf(1), BalanceAfter: query.AmountOf(1),
			Causes: []query.Cause{{Kind: "transaction", TxHash: fmt.Sprintf("0x%064x", 1), Amount: query.AmountOf(1)}}}, query.FinalityLatest)})
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				req, _ := http.NewRequest("POST", urls[int(i)%len(urls)], bytes.NewReader(body))
				req.Header.Set("webhook-id", "x")
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// BenchmarkEvents measures webhook delivery on PostgreSQL against a
// local receiver, each figure beside a reference of the same run:
//
//   - one endpoint, 3,000 events waiting: events/s against a bare loop of
//     HTTP POSTs of the same bodies, one at a time (target ≥ 1,000/s);
//   - 100 endpoints, 100 events each waiting: deliveries/s against the
//     bare loop with as many workers as the deliverer (target ≥ 5,000/s);
//   - the writer's blocks/s (10 rows each, as fast as it goes) with
//     deliveries running against none (target ≥ 0.9);
//   - events written at 1,000/s (10 every 10 ms) while delivered: p50
//     and p99 from the commit to the receiver having the request (target
//     p50 ≤ 200 ms, p99 ≤ 1 s).
func BenchmarkEvents(b *testing.B) {
	for range b.N {
		// One endpoint.
		r := newBenchRig(b, 10)
		for range 300 {
			r.write(10)
		}
		ref := bare(b, []string{r.recv.URL + "/x"}, 3000, 1)
		r.count.Store(0)
		r.hooks(1, 0)
		took := r.deliver(3000)
		rate := 3000 / took.Seconds()
		b.Logf("one endpoint: %.0f events/s; bare POST loop %.0f/s; ratio %.2f", rate, ref, rate/ref)
		b.ReportMetric(rate, "events/s")

		// 100 endpoints.
		r = newBenchRig(b, 10)
		for range 10 {
			r.write(10)
		}
		urls := make([]string, 100)
		for i := range urls {
			urls[i] = fmt.Sprintf("%s/%d", r.recv.URL, i)
		}
		ref = bare(b, urls, 10000, webhook.DefaultWorkers)
		r.count.Store(0)
		r.hooks(100, 0)
		took = r.deliver(10000)
		rate = 10000 / took.Seconds()
		b.Logf("100 endpoints: %.0f deliveries/s; bare POST loop, %d workers, %.0f/s; ratio %.2f", rate, webhook.DefaultWorkers, ref, rate/ref)
		b.ReportMetric(rate, "deliveries/s")

		// The writer as fast as it goes, with deliveries running and
		// without; then the latency at 1,000 events/s.
		r = newBenchRig(b, 10)
		r.write(10)
		off := r.writeFor(2*time.Second, 0, nil)
		last, _ := r.db.LastEventID(context.Background())
		r.hooks(1, last)
		ctx, cancel := context.WithCancel(context.Background())
		w := events.NewWatcher(r.db.LastEventID, 100*time.Millisecond)
		r.db.OnEvents(w.Notify)
		d := webhook.New(webhook.Config{Store: r.db, Policy: webhook.Policy{AllowHTTP: true, AllowPrivate: true}, Holder: "bench", Watcher: w})
		done := make(chan struct{})
		go func() { defer close(done); d.Run(ctx) }()
		on := r.writeFor(2*time.Second, 0, nil)
		b.Logf("writer: %.0f blocks/s of 10 rows with deliveries running, %.0f without; ratio %.2f", float64(on)/2, float64(off)/2, float64(on)/float64(off))
		for start := time.Now(); r.count.Load() < int64(on*10); time.Sleep(10 * time.Millisecond) {
			if time.Since(start) > time.Minute {
				b.Fatalf("%d of %d delivered in a minute", r.count.Load(), on*10)
			}
		}
		committed := make(map[string]time.Time)
		r.writeFor(3*time.Second, 10*time.Millisecond, committed)
		for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
			r.mu.Lock()
			n := 0
			for id := range committed {
				if _, ok := r.arrived[id]; ok {
					n++
				}
			}
			r.mu.Unlock()
			if n >= len(committed) || time.Since(start) > time.Minute {
				break
			}
		}
		cancel()
		<-done
		var lat []time.Duration
		r.mu.Lock()
		for id, t := range committed {
			if a, ok := r.arrived[id]; ok {
				lat = append(lat, a.Sub(t))
			}
		}
		r.mu.Unlock()
		slices.Sort(lat)
		if len(lat) == 0 {
			b.Fatal("no event delivered while writing")
		}
		p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
		b.Logf("latency at %d events/s (10 per block every 10 ms): p50 %.1f ms, p99 %.1f ms (%d of %d delivered)", len(committed)/3, ms(p50), ms(p99), len(lat), len(committed))
		b.ReportMetric(ms(p50), "p50-ms")
		b.ReportMetric(ms(p99), "p99-ms")
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// writeFor writes blocks of 10 rows, one every pace (0: as fast as it
// can), for d, recording each event's commit time in committed (when not
// nil) by webhook-id; it returns the blocks written.
func (r *benchRig) writeFor(d, pace time.Duration, committed map[string]time.Time) int {
	n := 0
	var tick <-chan time.Time
	if pace > 0 {
		t := time.NewTicker(pace)
		defer t.Stop()
		tick = t.C
	}
	for end := time.Now().Add(d); time.Now().Before(end); {
		t, last := r.write(10)
		n++
		if committed != nil {
			for p := last - 9; p <= last; p++ {
				committed[fmt.Sprintf("evt_%d", p)] = t
			}
		}
		if tick != nil {
			<-tick
		}
	}
	return n
}
