package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/events"
)

// Store is what the deliverer reads and records.
type Store interface {
	query.WebhookStore
	AccountEvents(ctx context.Context, account int64, after int64, f query.EventFilter, limit int) (query.EventPage, error)
}

// Defaults of Config.
const (
	DefaultWorkers  = 16
	DefaultTimeout  = 10 * time.Second
	DefaultRetryFor = 72 * time.Hour
	DefaultLeaseTTL = 30 * time.Second
)

// Back-off after a failed attempt: firstRetry, doubled at each further
// failure up to maxRetry, each drawn at random from its upper half
// (jitter); a Retry-After is followed up to maxRetry.
const (
	firstRetry = 5 * time.Second
	maxRetry   = time.Hour
)

// Config configures a Deliverer.
type Config struct {
	// Store holds the endpoints and the feed; required.
	Store Store
	// Policy says which URLs and addresses may be reached.
	Policy Policy
	// Holder names this replica in the endpoints' leases; unique per
	// process.
	Holder string
	// Workers bounds the endpoints delivered to at once; zero is
	// DefaultWorkers. One slow endpoint holds one worker.
	Workers int
	// WorkersPerRequester bounds the workers one requester's endpoints
	// hold at once, so that one requester's slow endpoints leave the
	// others theirs; zero is a quarter of Workers (at least one).
	WorkersPerRequester int
	// Timeout bounds each attempt, connection to last header; zero is
	// DefaultTimeout.
	Timeout time.Duration
	// RetryFor is how long an endpoint may keep failing before it is
	// disabled; zero is DefaultRetryFor (3 days).
	RetryFor time.Duration
	// LeaseTTL is how long an endpoint stays leased to this replica
	// without a renewal: a dead replica's endpoints are delivered by
	// another within it. Zero is DefaultLeaseTTL; it is at least twice
	// Timeout.
	LeaseTTL time.Duration
	// Rate bounds the events per second delivered for each requester
	// (all its endpoints together), in bursts of Burst; zero: none.
	Rate  float64
	Burst int
	// Watcher wakes the deliverer when the feed grows; nil: it looks
	// every second.
	Watcher *events.Watcher
	// Logger receives what happens; nil discards it.
	Logger *slog.Logger
	// Metrics registers the delivery metrics; nil registers none.
	Metrics prometheus.Registerer
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// TestAddress is the address the data of a test event names when the
	// webhook's filter names none: one in the form of the chains served
	// (cmd/addrd: the EVM's zero address); "" names none.
	TestAddress string
	// Finished, when set, is called after each delivery run of an
	// endpoint is recorded, with what it recorded (tests, monitoring).
	Finished func(id string, o query.WebhookOutcome)
}

// Deliverer pushes the feed to the endpoints, spread over the replicas
// that run one on the same database.
type Deliverer struct {
	cfg    Config
	client *http.Client
	log    *slog.Logger
	limits *limiters

	attempts *prometheus.CounterVec
	latency  prometheus.Histogram
}

// New returns a Deliverer; Run starts it.
func New(cfg Config) *Deliverer {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.WorkersPerRequester <= 0 {
		cfg.WorkersPerRequester = max(1, cfg.Workers/4)
	}
	cfg.WorkersPerRequester = min(cfg.WorkersPerRequester, cfg.Workers)
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.RetryFor <= 0 {
		cfg.RetryFor = DefaultRetryFor
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	// A run renews its lease after a third of it at most, then makes an
	// attempt of up to Timeout: the lease must outlast both, or another
	// replica would take the endpoint while an attempt is in flight.
	cfg.LeaseTTL = max(cfg.LeaseTTL, 2*cfg.Timeout)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Deliverer{cfg: cfg, client: cfg.Policy.Client(cfg.Timeout), log: log,
		limits: &limiters{rate: cfg.Rate, burst: max(1, cfg.Burst), m: make(map[int64]*rate.Limiter)},
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "addrd_webhook_attempts_total", Help: "Webhook delivery attempts by result: ok, http (a non-2xx answer), error (none).",
		}, []string{"result"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "addrd_webhook_attempt_seconds", Help: "Webhook delivery attempts' duration.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
	}
	if cfg.Metrics != nil {
		cfg.Metrics.MustRegister(d.attempts, d.latency)
	}
	return d
}

// Policy returns the deliverer's URL and address policy.
func (d *Deliverer) Policy() Policy { return d.cfg.Policy }

// Run delivers until ctx ends: it leases due endpoints, one per free
// worker, and delivers each one's events in order. The endpoint due the
// longest goes first, of a requester under its share of the workers.
func (d *Deliverer) Run(ctx context.Context) {
	free := make(chan struct{}, d.cfg.Workers)
	defer func() { // wait for the workers
		for range d.cfg.Workers {
			free <- struct{}{}
		}
	}()
	busy := &shares{limit: d.cfg.WorkersPerRequester, n: make(map[int64]int)}
	for {
		select {
		case free <- struct{}{}:
		case <-ctx.Done():
			return
		}
		var seen int64
		if d.cfg.Watcher != nil {
			seen = d.cfg.Watcher.Last()
		}
		w, ok, err := d.cfg.Store.ClaimWebhook(ctx, d.cfg.Holder, d.cfg.LeaseTTL, busy.full()...)
		if ok {
			busy.add(w.Account, 1)
			go func() {
				defer func() { busy.add(w.Account, -1); <-free }()
				d.run(ctx, w)
			}()
			continue
		}
		<-free
		if err != nil && ctx.Err() == nil {
			d.log.Warn("webhooks: cannot lease an endpoint", "err", err)
		}
		// Nothing due: wait for the feed to grow, or a second for
		// retries coming due.
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		if d.cfg.Watcher != nil && err == nil {
			d.cfg.Watcher.Wait(wctx, seen)
		} else {
			<-wctx.Done()
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
	}
}

// pageSize is how many events a run reads at a time.
const pageSize = 100

// run delivers w's events after its cursor, in order, until none is
// left or one fails, recording the attempts and the cursor with its
// lease renewed every third of the lease, and at the end.
func (d *Deliverer) run(ctx context.Context, w query.Webhook) {
	sg, err := d.signer(w)
	if err != nil {
		d.finish(ctx, w, query.WebhookOutcome{Cursor: w.Cursor, Disable: err.Error(), Release: true})
		return
	}
	o := query.WebhookOutcome{Cursor: w.Cursor, Failures: w.Failures, FailingSince: w.FailingSince, NextAttempt: d.cfg.Now()}
	flushed := d.cfg.Now()
	for {
		page, err := d.cfg.Store.AccountEvents(ctx, w.Account, o.Cursor, w.Filter, pageSize)
		if errors.Is(err, query.ErrEventsPruned) {
			o.Disable = "the events after its cursor are past the server's retention: replay it from a newer cursor"
			o.Release = true
			d.finish(ctx, w, o)
			return
		}
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("webhooks: cannot read the feed", "webhook", w.ID, "err", err)
			}
			o.Release = true
			d.finish(ctx, w, o)
			return
		}
		for _, e := range page.Events {
			if err := d.limits.wait(ctx, w.Account); err != nil {
				o.Release = true
				d.finish(ctx, w, o)
				return
			}
			a, retryAfter := d.attempt(ctx, w, sg, e, events.ID(e))
			o.Attempts = append(o.Attempts, a)
			if a.Error == "" {
				o.Cursor, o.Failures, o.FailingSince = e.ID, 0, time.Time{}
				if len(o.Attempts) >= pageSize || d.cfg.Now().Sub(flushed) > d.cfg.LeaseTTL/3 {
					if !d.finish(ctx, w, o) {
						return
					}
					o.Attempts, flushed = nil, d.cfg.Now()
				}
				continue
			}
			now := d.cfg.Now()
			o.Failures++
			if o.FailingSince.IsZero() {
				o.FailingSince = a.Time
			}
			o.NextAttempt = now.Add(backoff(o.Failures, retryAfter))
			if now.Sub(o.FailingSince) >= d.cfg.RetryFor {
				o.Disable = fmt.Sprintf("failing since %s (%d attempts): %s", o.FailingSince.Format(time.RFC3339), o.Failures, failure(a))
			}
			o.Release = true
			d.finish(ctx, w, o)
			return
		}
		o.Cursor = max(o.Cursor, page.Through)
		if len(page.Events) < pageSize {
			o.Release = true
			d.finish(ctx, w, o)
			return
		}
	}
}

// finish records o; false when the lease is gone (or the store failed):
// the run stops, and the events after the recorded cursor go again.
func (d *Deliverer) finish(ctx context.Context, w query.Webhook, o query.WebhookOutcome) bool {
	err := d.cfg.Store.FinishWebhook(context.WithoutCancel(ctx), d.cfg.Holder, w.ID, o, d.cfg.LeaseTTL)
	switch {
	case errors.Is(err, query.ErrLeaseGone):
		d.log.Info("webhooks: endpoint taken over or changed while delivering", "webhook", w.ID)
		return false
	case err != nil:
		d.log.Warn("webhooks: cannot record deliveries", "webhook", w.ID, "err", err)
		return false
	}
	if o.Disable != "" {
		d.log.Warn("webhooks: endpoint disabled", "webhook", w.ID, "reason", o.Disable)
	}
	if d.cfg.Finished != nil {
		d.cfg.Finished(w.ID, o)
	}
	return true
}

// failure says why attempt a failed.
func failure(a query.WebhookAttempt) string {
	if a.Status != 0 {
		return "HTTP " + strconv.Itoa(a.Status)
	}
	return a.Error
}

// backoff is the wait before attempt failures+1: Retry-After when the
// endpoint gave one, else exponential from firstRetry, capped at
// maxRetry, drawn from its upper half.
func backoff(failures int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, maxRetry)
	}
	d := maxRetry
	if failures < 20 {
		d = min(maxRetry, firstRetry<<(failures-1))
	}
	return d/2 + rand.N(d/2+1)
}

func (d *Deliverer) signer(w query.Webhook) (signer, error) {
	old := ""
	if w.OldSecret != "" && d.cfg.Now().Before(w.OldUntil) {
		old = w.OldSecret
	}
	return newSigner(w.Secret, old)
}

// excerptLen is how much of a response body the log keeps: the only part
// of it read.
const excerptLen = 512

// Test sends w a made-up event of type test, at once, whatever its
// state, and returns the attempt (not logged: the caller logs it).
func (d *Deliverer) Test(ctx context.Context, w query.Webhook, id string) query.WebhookAttempt {
	sg, err := d.signer(w)
	if err != nil {
		return query.WebhookAttempt{Webhook: w.ID, EventID: id, EventType: query.EventTest, Time: d.cfg.Now().UTC(), Error: err.Error()}
	}
	addr := w.Filter.Address
	if addr == "" {
		addr = d.cfg.TestAddress
	}
	e := query.Event{Kind: query.EventTest, Created: d.cfg.Now(), Data: events.ChangeJSON(query.BalanceChange{
		Chain: w.Filter.Chain, Address: addr}, query.FinalityLatest)}
	a, _ := d.attempt(ctx, w, sg, e, id)
	return a
}

// attempt POSTs event e to w once, signed as message id, and returns
// the attempt and the endpoint's Retry-After (zero when none). A 2xx
// answer is a success; anything else, a 3xx included, is a failure.
func (d *Deliverer) attempt(ctx context.Context, w query.Webhook, sg signer, e query.Event, id string) (query.WebhookAttempt, time.Duration) {
	body := make([]byte, 0, 256+len(e.Data))
	if e.Kind == query.EventTest {
		body = events.AppendTestJSON(body, id, e)
	} else {
		body = events.AppendJSON(body, w.Account, e)
	}
	start := d.cfg.Now()
	a := query.WebhookAttempt{Webhook: w.ID, EventID: id, EventType: e.Kind, Time: start.UTC()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		a.Error = "bad URL: " + err.Error()
		return a, 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "addrd-webhooks/1")
	if err := sg.headers(req.Header, a.EventID, start, body); err != nil {
		a.Error = err.Error()
		return a, 0
	}
	resp, err := d.client.Do(req)
	a.Latency = d.cfg.Now().Sub(start)
	d.latency.Observe(a.Latency.Seconds())
	if err != nil {
		a.Error = cleanError(err)
		d.attempts.WithLabelValues("error").Inc()
		return a, 0
	}
	defer resp.Body.Close()
	a.Status = resp.StatusCode
	ex, _ := io.ReadAll(io.LimitReader(resp.Body, excerptLen))
	a.Response = excerpt(ex)
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		d.attempts.WithLabelValues("ok").Inc()
		return a, 0
	}
	d.attempts.WithLabelValues("http").Inc()
	a.Error = "HTTP " + strconv.Itoa(resp.StatusCode)
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		a.Error += " (redirects are not followed: give the final URL)"
	}
	var retryAfter time.Duration
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), d.cfg.Now())
	}
	return a, retryAfter
}

// cleanError is a transport error as the log shows it: without the
// request's method and URL, which the requester knows, and without the
// address of the server's own DNS resolver, which is none of theirs.
func cleanError(err error) string {
	if dnsErr, ok := errors.AsType[*net.DNSError](err); ok {
		msg := "lookup " + dnsErr.Name + ": " + dnsErr.Err
		if dnsErr.IsTimeout {
			msg += " (timed out)"
		}
		return msg
	}
	var uerr interface{ Unwrap() error }
	if errors.As(err, &uerr) {
		if inner := uerr.Unwrap(); inner != nil {
			err = inner
		}
	}
	s := err.Error()
	if errors.Is(err, context.DeadlineExceeded) || strings.Contains(s, "Client.Timeout") {
		return "timed out"
	}
	return s
}

// excerpt is the start of a response body as the log keeps it: valid
// UTF-8 without NUL (which neither database stores in text).
func excerpt(b []byte) string {
	s := strings.ToValidUTF8(string(b), string(utf8.RuneError))
	return strings.ReplaceAll(s, "\x00", string(utf8.RuneError))
}

// parseRetryAfter reads a Retry-After header: seconds, or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return max(time.Second, time.Duration(n)*time.Second)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
