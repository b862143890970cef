package webhook_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/events"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/webhook"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const addr = "0x00000000000000000000000000000000000000aa"

// Receiver modes.
const (
	modeOK       = iota
	modeDown     // the connection is closed without an answer
	mode500      // 500
	mode429      // 429 with Retry-After: 7
	modeSlow     // no answer until the client gives up
	modeHuge     // 200 with a 1 GiB body
	modeRedirect // 302 to another server on 127.0.0.1
)

// receiver is a webhook endpoint: it verifies every delivery with the
// reference library and keeps the ids of those it answered 2xx.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	secret string
	mode   atomic.Int32
	mu     sync.Mutex
	got    []string // webhook-ids answered 2xx, in order
	bodies []map[string]any
	hits   atomic.Int64
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	rc.hits.Add(1)
	body, _ := io.ReadAll(r.Body)
	switch rc.mode.Load() {
	case modeDown:
		hj, _ := w.(http.Hijacker)
		conn, _, _ := hj.Hijack()
		conn.Close()
		return
	case mode500:
		http.Error(w, "receiver broken", http.StatusInternalServerError)
		return
	case mode429:
		w.Header().Set("Retry-After", "7")
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return
	case modeSlow:
		<-r.Context().Done() // no sleep: until the client leaves
		return
	case modeHuge:
		w.WriteHeader(200)
		buf := make([]byte, 1<<20)
		for range 1024 {
			if _, err := w.Write(buf); err != nil {
				return // the client stopped reading
			}
		}
		return
	case modeRedirect:
		http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
		return
	}
	wh, err := standardwebhooks.NewWebhook(rc.secret)
	if err != nil {
		rc.t.Error(err)
		return
	}
	if err := wh.VerifyIgnoringTimestamp(body, r.Header); err != nil {
		rc.t.Errorf("delivery %s does not verify: %v", r.Header.Get("webhook-id"), err)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || m["id"] != r.Header.Get("webhook-id") {
		rc.t.Errorf("body %s, webhook-id %s", body, r.Header.Get("webhook-id"))
	}
	rc.mu.Lock()
	rc.got = append(rc.got, r.Header.Get("webhook-id"))
	rc.bodies = append(rc.bodies, m)
	rc.mu.Unlock()
	w.Write([]byte("thanks"))
}

func (rc *receiver) received() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// rig is a store with one subscribed requester, a webhook endpoint at a
// receiver, and a running deliverer on a fake clock.
type rig struct {
	t        *testing.T
	db       *store.DB
	clk      *testenv.Clock
	rc       *receiver
	hook     query.Webhook
	account  int64
	outcomes chan query.WebhookOutcome
	block    uint64
}

func newRig(t *testing.T, dsn string, cfg webhook.Config) *rig {
	ctx := context.Background()
	clk := testenv.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	db, err := store.Open(ctx, dsn, store.WithNow(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	k, _, err := db.CreateAPIKey(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Subscribe(ctx, k.AccountID, "ETH", addr); err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, db: db, clk: clk, rc: newReceiver(t), account: k.AccountID, outcomes: make(chan query.WebhookOutcome, 1000)}
	r.rc.secret, _ = webhook.NewSecret(rand.Reader)
	r.hook, err = db.CreateWebhook(ctx, query.Webhook{Account: k.AccountID, URL: r.rc.srv.URL + "/hook", Secret: r.rc.secret})
	if err != nil {
		t.Fatal(err)
	}
	w := events.NewWatcher(db.LastEventID, 20*time.Millisecond)
	db.OnEvents(w.Notify)
	cfg.Store, cfg.Watcher, cfg.Now = db, w, clk.Now
	cfg.Policy = webhook.Policy{AllowHTTP: true, AllowPrivate: true}
	if cfg.Holder == "" {
		cfg.Holder = "test"
	}
	cfg.Finished = func(_ string, o query.WebhookOutcome) { r.outcomes <- o }
	d := webhook.New(cfg)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); d.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// store stores the next block with a statement row of the address and
// returns the event ids written.
func (r *rig) store(n int) []string {
	r.t.Helper()
	var ids []string
	for range n {
		r.block++
		c := query.BalanceChange{Chain: "ETH", Address: addr, Block: r.block, Amount: query.AmountOf(1), BalanceAfter: query.AmountOf(int64(r.block))}
		b := query.Block{Number: r.block, Hash: fmt.Sprintf("0x%d", r.block), ParentHash: fmt.Sprintf("0x%d", r.block-1)}
		if err := r.db.StoreBlocks(context.Background(), "ETH", []query.BlockData{{Block: b, Changes: []query.BalanceChange{c}}}); err != nil {
			r.t.Fatal(err)
		}
		last, _ := r.db.LastEventID(context.Background())
		ids = append(ids, fmt.Sprintf("evt_%d", last))
	}
	return ids
}

// next waits for the next recorded run.
func (r *rig) next() query.WebhookOutcome {
	r.t.Helper()
	select {
	case o := <-r.outcomes:
		return o
	case <-time.After(60 * time.Second):
		r.t.Fatal("no delivery run recorded in 60 s")
		return query.WebhookOutcome{}
	}
}

// until reads runs until one has cursor at or past id's position.
func (r *rig) until(id string) {
	r.t.Helper()
	var pos int64
	fmt.Sscanf(id, "evt_%d", &pos)
	for o := r.next(); o.Cursor < pos; o = r.next() {
	}
}

func TestDeliverInOrder(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		r := newRig(t, dsn, webhook.Config{})
		want := r.store(30)
		r.until(want[len(want)-1])
		if got := r.rc.received(); !slices.Equal(got, want) {
			t.Fatalf("received %v\nwant %v", got, want)
		}
		b := r.rc.bodies[0]
		data, _ := b["data"].(map[string]any)
		if b["type"] != query.EventBalanceChange || data["address"] != addr || b["cursor"] == "" {
			t.Fatalf("first body %v", b)
		}
		log, err := r.db.WebhookAttempts(context.Background(), r.hook.ID, 0, 100)
		if err != nil || len(log) != 30 || log[0].EventID != want[29] || log[0].Status != 200 || log[0].Response != "thanks" {
			t.Fatalf("log %+v, %v", log, err)
		}
		h, _ := r.db.Webhook(context.Background(), r.account, r.hook.ID)
		if h.Cursor < 30 || h.Failures != 0 || h.State != query.WebhookActive {
			t.Fatalf("endpoint after delivering: %+v", h)
		}
	})
}

// TestDeliverAfterOutage: a receiver down for 10 minutes (the clock's),
// then back, gets every event, in order, none lost; the attempts
// meanwhile back off exponentially.
func TestDeliverAfterOutage(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		r := newRig(t, dsn, webhook.Config{})
		r.rc.mode.Store(modeDown)
		want := r.store(10)
		start := r.clk.Now()
		var waits []time.Duration
		for {
			o := r.next()
			if o.Failures == 0 || len(o.Attempts) != 1 || o.Attempts[0].Error == "" {
				t.Fatalf("a run while down: %+v", o)
			}
			wait := o.NextAttempt.Sub(r.clk.Now())
			waits = append(waits, wait)
			if r.clk.Now().Sub(start) >= 10*time.Minute {
				break
			}
			r.clk.Advance(wait)
		}
		for i := 1; i < len(waits); i++ {
			if waits[i] < waits[i-1]/2 || waits[i] > time.Hour {
				t.Fatalf("back-off %v", waits)
			}
		}
		if len(waits) < 5 || len(waits) > 12 {
			t.Fatalf("%d attempts in 10 minutes: %v", len(waits), waits)
		}
		r.rc.mode.Store(modeOK)
		r.clk.Advance(waits[len(waits)-1])
		r.until(want[len(want)-1])
		if got := r.rc.received(); !slices.Equal(got, want) {
			t.Fatalf("received %v\nwant %v", got, want)
		}
	})
}

// TestDeliverFaults: each misbehaving receiver counts as a failed
// attempt with its reason, bounded in time and memory; a 429's
// Retry-After sets the next attempt; a redirect is not followed.
func TestDeliverFaults(t *testing.T) {
	r := newRig(t, testenv.SQLite(t), webhook.Config{Timeout: 500 * time.Millisecond})
	var other atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { other.Add(1) }))
	defer elsewhere.Close()
	r.rc.mode.Store(mode500)
	want := r.store(1)
	for _, tt := range []struct {
		mode  int32
		error string
		retry time.Duration // exact next attempt, when set
	}{
		{mode500, "HTTP 500", 0},
		{mode429, "HTTP 429", 7 * time.Second},
		{modeSlow, "timed out", 0},
		{modeRedirect, "redirects are not followed", 0},
		{modeDown, "EOF", 0},
	} {
		r.rc.mode.Store(tt.mode) // the attempt to come
		o := r.next()
		a := o.Attempts[len(o.Attempts)-1]
		if !strings.Contains(a.Error, tt.error) || a.EventID != want[0] {
			t.Fatalf("mode %d: attempt %+v, want error %q", tt.mode, a, tt.error)
		}
		if tt.retry > 0 && o.NextAttempt.Sub(r.clk.Now()) != tt.retry {
			t.Fatalf("mode %d: next attempt in %v, want %v", tt.mode, o.NextAttempt.Sub(r.clk.Now()), tt.retry)
		}
		if tt.mode == mode500 && a.Response != "receiver broken\n" {
			t.Fatalf("excerpt %q", a.Response)
		}
		r.clk.Advance(o.NextAttempt.Sub(r.clk.Now()))
	}
	if other.Load() != 0 {
		t.Fatal("the redirect was followed")
	}
	// A 1 GiB answer: the excerpt only is read, and the delivery counts.
	r.rc.mode.Store(modeHuge)
	o := r.next()
	if a := o.Attempts[0]; a.Status != 200 || utf8.RuneCountInString(a.Response) != 512 || o.Failures != 0 {
		t.Fatalf("huge answer: %+v", o)
	}
}

// TestDisableAfterRetryPeriod: an endpoint failing for longer than
// RetryFor is disabled with a reason the requester reads.
func TestDisableAfterRetryPeriod(t *testing.T) {
	r := newRig(t, testenv.SQLite(t), webhook.Config{RetryFor: time.Hour})
	r.rc.mode.Store(mode500)
	r.store(1)
	for {
		o := r.next()
		if o.Disable != "" {
			break
		}
		r.clk.Advance(o.NextAttempt.Sub(r.clk.Now()))
	}
	h, err := r.db.Webhook(context.Background(), r.account, r.hook.ID)
	if err != nil || h.State != query.WebhookDisabled || !strings.Contains(h.DisabledReason, "HTTP 500") {
		t.Fatalf("endpoint %+v, %v", h, err)
	}
	if h.Cursor != r.hook.Cursor {
		t.Fatalf("cursor moved to %d past an event never delivered", h.Cursor)
	}
}

// TestSlowEndpointDelaysNoOther: an endpoint that never answers (until
// its attempts time out) holds one worker; another endpoint of the same
// requester gets every event meanwhile.
func TestSlowEndpointDelaysNoOther(t *testing.T) {
	r := newRig(t, testenv.SQLite(t), webhook.Config{Timeout: 30 * time.Second})
	stuck := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-stuck:
		case <-req.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(stuck)
	if _, err := r.db.CreateWebhook(context.Background(), query.Webhook{Account: r.account, URL: slow.URL, Secret: r.rc.secret}); err != nil {
		t.Fatal(err)
	}
	want := r.store(20)
	for start := time.Now(); len(r.rc.received()) < len(want); time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("the other endpoint got %d of %d events while one was stuck", len(r.rc.received()), len(want))
		}
	}
	if got := r.rc.received(); !slices.Equal(got, want) {
		t.Fatalf("received %v, want %v", got, want)
	}
}
