// Package api is the address-data service's /v1 HTTP API over a
// query.Store: subscriptions, balances and transactions, HTTP basic auth
// with API keys, JSON errors with gRPC codes, /healthz, /metrics and its
// own OpenAPI description at /v1/openapi.yaml.
package api

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wharfhq/wharf/internal/clientip"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/events"
	"github.com/wharfhq/wharf/query/webhook"
)

//go:embed openapi.yaml
var openapiYAML []byte

// Limits of a request, so that hostile input costs little.
const (
	maxPathLen  = 1024
	maxQueryLen = 1024
)

// Page sizes.
const (
	defaultListSize = 100
	maxListSize     = 1000
	defaultTxSize   = 50
	maxTxSize       = 1000
)

// Config configures the API.
type Config struct {
	// Store is the storage; required.
	Store query.Store
	// Chains are the chain names the API accepts in paths, such as "ETH".
	Chains []string
	// Syntax is how each chain of Chains spells its addresses and
	// transaction hashes (query/evm's Syntax for an EVM chain); New
	// panics when a chain has none.
	Syntax map[string]chain.Syntax
	// Logger receives request and error logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock request durations are measured with; nil is
	// time.Now.
	Now func() time.Time
	// Metrics registers the API's metrics; nil registers none. When it is
	// also a prometheus.Gatherer, /metrics serves it.
	Metrics prometheus.Registerer
	// MaxInFlight bounds the authenticated requests that use the store
	// at once; the others wait their turn in arrival order. Keep it at or
	// under the store's connection pool: the pool serves its waiters in
	// random order, which gives a busy server a tail of seconds. Zero is
	// DefaultMaxInFlight.
	MaxInFlight int
	// TurnsPerKey bounds the store turns one API key holds at once; its
	// other requests wait, and the keys waiting are served round-robin.
	// Zero is half of MaxInFlight (rounded up).
	TurnsPerKey int
	// MaxRequestsPerKey bounds the requests of one API key at once, from
	// authentication until the answer is written (one a connection:
	// answers unread count); beyond it a request is answered 429. Zero is
	// DefaultMaxRequestsPerKey.
	MaxRequestsPerKey int
	// BodyTimeout bounds the reading of a request body, done before a
	// store turn is taken; a body not read in time is answered 408. Zero
	// is DefaultBodyTimeout.
	BodyTimeout time.Duration

	// ClientIP finds a request's client address for the limits and the
	// logs (X-Forwarded-For from trusted proxies); nil: the peer.
	ClientIP *clientip.Resolver
	// AuthFailuresPerClient limits failed authentications per client
	// address (IPv6: per /64); zero is DefaultAuthFailuresPerClient, a
	// negative Rate none. A client over it is answered 429 before its
	// credentials are checked, so it costs no database connection.
	AuthFailuresPerClient Limit
	// AuthFailuresPerKey limits failed authentications per API id, from
	// any client; zero is DefaultAuthFailuresPerKey, a negative Rate
	// none. Over it, a wrong secret for the id is answered 429; the
	// right one still passes, so the key's owner is not locked out.
	AuthFailuresPerKey Limit
	// KeyRate limits the requests of each API key; zero is no limit.
	KeyRate Limit
	// Health adds the chains' fetching to /healthz; nil: /healthz says
	// only whether the database answers.
	Health ChainReporter
	// Events is the event feed (GET /v1/events); nil: Store's, when it
	// keeps one.
	Events query.EventStore
	// Watcher wakes the feed's long polls; nil: one that reads the
	// newest position every 100 ms while any request waits.
	Watcher *events.Watcher
	// Webhooks checks endpoint URLs and sends test events; nil:
	// /v1/webhooks answers 501. The endpoints are Store's.
	Webhooks *webhook.Deliverer
}

// Defaults of Config.
const (
	DefaultMaxInFlight       = 16
	DefaultMaxRequestsPerKey = 64
)

// Server is the API's http.Handler.
type Server struct {
	store  query.Store
	chains []string
	syntax map[string]chain.Syntax
	health ChainReporter // nil: /healthz is the database's ping
	// healthTurn is held by the one reading of /healthz under way.
	healthTurn chan struct{}
	log        *slog.Logger
	now        func() time.Time
	mux        *http.ServeMux

	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	limited  *prometheus.CounterVec

	clientIP      *clientip.Resolver
	failsByClient *buckets[netip.Prefix]
	failsByKey    *buckets[string]
	requestsByKey *buckets[string]

	mu  sync.Mutex
	key []byte // page-token key, read from the store on first use

	bufs bufPool // response buffers of transaction pages

	heads headCache // the stored head of each chain, for confirmations

	feed  query.EventStore // nil: no feed
	watch *events.Watcher

	webhooks query.WebhookStore // nil: no webhooks
	deliver  *webhook.Deliverer

	// turns are the store's turns (turns.go); bodyTimeout bounds the
	// reading of a request body, before a turn is taken.
	turns       *turns
	bodyTimeout time.Duration
	// inFlight counts each API key's requests, from authentication until
	// the answer is written.
	inFlight *keyCounts
}

// New returns the API over cfg.Store.
func New(cfg Config) *Server {
	s := &Server{
		store:      cfg.Store,
		health:     cfg.Health,
		healthTurn: make(chan struct{}, 1),
		chains:     slices.Clone(cfg.Chains),
		syntax:     maps.Clone(cfg.Syntax),
		log:        logger(cfg.Logger),
		now:        cfg.Now,
		mux:        http.NewServeMux(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "addrd_http_requests_total", Help: "HTTP requests by method, route and status code.",
		}, []string{"method", "route", "code"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "addrd_http_limited_total", Help: "Requests answered 429 by the limit they reached.",
		}, []string{"limit"}),
		clientIP:      cfg.ClientIP,
		failsByClient: newBuckets[netip.Prefix](orDefault(cfg.AuthFailuresPerClient, DefaultAuthFailuresPerClient)),
		failsByKey:    newBuckets[string](orDefault(cfg.AuthFailuresPerKey, DefaultAuthFailuresPerKey)),
		requestsByKey: newBuckets[string](cfg.KeyRate),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "addrd_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route"}),
	}
	if s.now == nil {
		s.now = time.Now
	}
	for _, c := range s.chains {
		if s.syntax[c] == nil {
			panic(fmt.Sprintf("api: chain %s has no Syntax", c))
		}
	}
	s.feed, s.watch = cfg.Events, cfg.Watcher
	if es, ok := cfg.Store.(query.EventStore); ok && s.feed == nil {
		s.feed = es
	}
	if ws, ok := cfg.Store.(query.WebhookStore); ok && s.feed != nil {
		s.webhooks, s.deliver = ws, cfg.Webhooks
	}
	if s.watch == nil && s.feed != nil {
		s.watch = events.NewWatcher(s.feed.LastEventID, 100*time.Millisecond)
	}
	n := cfg.MaxInFlight
	if n <= 0 {
		n = DefaultMaxInFlight
	}
	share := cfg.TurnsPerKey
	if share <= 0 {
		share = (n + 1) / 2
	}
	s.turns = newTurns(n, share)
	s.bodyTimeout = cmp.Or(cfg.BodyTimeout, DefaultBodyTimeout)
	s.inFlight = &keyCounts{limit: cmp.Or(cfg.MaxRequestsPerKey, DefaultMaxRequestsPerKey), n: make(map[string]int)}
	if cfg.Metrics != nil {
		cfg.Metrics.MustRegister(s.requests, s.duration, s.limited)
		if g, ok := cfg.Metrics.(prometheus.Gatherer); ok {
			s.mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
		}
	}
	for _, rt := range routes {
		s.mux.Handle(rt.pattern, s.authenticated(rt.handle))
	}
	s.mux.HandleFunc("GET /v1/openapi.yaml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		w.Write(openapiFor(r))
	})
	s.mux.HandleFunc("GET /healthz", s.healthz)
	return s
}

// LoadSecrets reads the API's secrets (the page-token key), creating
// them when the database has none yet. Called at start, it keeps the
// reads from depending on a write: on a full disk they still answer.
// Without it they are read on first use.
func (s *Server) LoadSecrets(ctx context.Context) error {
	_, err := s.tokens(ctx)
	return err
}

// tokens returns the page-token codec, reading its key from the store on
// first use unless LoadSecrets read it (so that the API starts while the
// database is away).
func (s *Server) tokens(ctx context.Context) (tokenCodec, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key == nil {
		key, err := s.store.Secret(ctx, "page-token")
		if err != nil {
			return tokenCodec{}, err
		}
		s.key = key
	}
	return tokenCodec{key: s.key}, nil
}
