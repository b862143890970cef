// Package api is the address-data service's /v1 HTTP API over a
// query.Store: subscriptions, balances and transactions, HTTP basic auth
// with API keys, JSON errors with gRPC codes, /healthz, /metrics and its
// own OpenAPI description at /v1/openapi.yaml.
package api

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wharfhq/wharf/query"
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
	// Logger receives request and error logs; nil discards them.
	Logger *slog.Logger
	// Clock measures request durations; nil is time.Now.
	Clock func() time.Time
	// Metrics registers the API's metrics; nil registers none. When it is
	// also a prometheus.Gatherer, /metrics serves it.
	Metrics prometheus.Registerer
	// MaxInFlight bounds the authenticated requests that use the store
	// at once; the others wait their turn in arrival order. Keep it at or
	// under the store's connection pool: the pool serves its waiters in
	// random order, which gives a busy server a tail of seconds. Zero is
	// DefaultMaxInFlight.
	MaxInFlight int
}

// DefaultMaxInFlight is MaxInFlight when Config leaves it zero.
const DefaultMaxInFlight = 16

// Server is the API's http.Handler.
type Server struct {
	store  query.Store
	chains []string
	log    *slog.Logger
	now    func() time.Time
	mux    *http.ServeMux

	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec

	mu  sync.Mutex
	key []byte // page-token key, read from the store on first use

	bufs bufPool // response buffers of transaction pages

	// turns holds a token for each request using the store; a channel's
	// blocked senders go in arrival order.
	turns chan struct{}
}

// route is one endpoint: its ServeMux pattern and handler. The openapi
// test holds this table and openapi.yaml together.
type route struct {
	pattern string
	handle  func(s *Server, w http.ResponseWriter, r *http.Request, a query.Account) error
}

var routes = []route{
	{"PUT /v1/chains/{chain}/addresses/{address}", (*Server).subscribe},
	{"DELETE /v1/chains/{chain}/addresses/{address}", (*Server).unsubscribe},
	{"GET /v1/addresses", (*Server).listAll},
	{"GET /v1/chains/{chain}/addresses", (*Server).listChain},
	{"GET /v1/chains/{chain}/addresses/{address}/balances", (*Server).balances},
	{"GET /v1/chains/{chain}/addresses/{address}/transactions", (*Server).transactions},
	{"GET /v1/chains/{chain}/transactions/{hash}", (*Server).transaction},
}

// New returns the API over cfg.Store.
func New(cfg Config) *Server {
	s := &Server{
		store:  cfg.Store,
		chains: slices.Clone(cfg.Chains),
		log:    logger(cfg.Logger),
		now:    cfg.Clock,
		mux:    http.NewServeMux(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "addrd_http_requests_total", Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "addrd_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route"}),
	}
	if s.now == nil {
		s.now = time.Now
	}
	n := cfg.MaxInFlight
	if n <= 0 {
		n = DefaultMaxInFlight
	}
	s.turns = make(chan struct{}, n)
	if cfg.Metrics != nil {
		cfg.Metrics.MustRegister(s.requests, s.duration)
		if g, ok := cfg.Metrics.(prometheus.Gatherer); ok {
			s.mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
		}
	}
	for _, rt := range routes {
		s.mux.Handle(rt.pattern, s.authenticated(rt.handle))
	}
	s.mux.HandleFunc("GET /v1/openapi.yaml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		w.Write(openapiYAML)
	})
	s.mux.HandleFunc("GET /healthz", s.healthz)
	return s
}

// Handle mounts h on the API's mux, for an endpoint beside /v1 that
// shares its logging, metrics and errors (a constant handler for the
// benchmark, say). With auth true, h runs behind the API-key check.
func (s *Server) Handle(pattern string, h http.Handler, auth bool) {
	if auth {
		inner := h
		h = s.authenticated(func(_ *Server, w http.ResponseWriter, r *http.Request, _ query.Account) error {
			inner.ServeHTTP(w, r)
			return nil
		})
	}
	s.mux.Handle(pattern, h)
}

type ctxKey struct{}

// requestID returns the id ServeHTTP gave r.
func requestID(r *http.Request) string {
	id, _ := r.Context().Value(ctxKey{}).(string)
	return id
}

func newRequestID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ServeHTTP bounds the request, routes it, answers unknown paths and
// methods with JSON errors, and records the outcome.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := s.now()
	id := newRequestID()
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, id))
	w.Header().Set("X-Request-Id", id)
	rw := &recorder{ResponseWriter: w, status: http.StatusOK}

	route := "unmatched"
	switch {
	case len(r.URL.EscapedPath()) > maxPathLen:
		s.writeError(rw, r, errorf(codeInvalidArgument, "request path longer than %d bytes", maxPathLen))
	case len(r.URL.RawQuery) > maxQueryLen:
		s.writeError(rw, r, errorf(codeInvalidArgument, "query string longer than %d bytes", maxQueryLen))
	default:
		h, pattern := s.mux.Handler(r)
		if pattern == "" {
			s.noRoute(rw, r, h)
			break
		}
		route = pattern
		// The mux matches again, setting r's path values.
		s.mux.ServeHTTP(rw, r)
	}
	if s.requests != nil {
		s.requests.WithLabelValues(route, strconv.Itoa(rw.status)).Inc()
		s.duration.WithLabelValues(route).Observe(s.now().Sub(start).Seconds())
	}
	s.log.DebugContext(r.Context(), "request", "request_id", id, "method", r.Method, "path", r.URL.Path,
		"route", route, "status", rw.status, "duration", s.now().Sub(start))
}

// noRoute answers what the mux did not match: it lets the mux decide
// (404, 405 with Allow, or a redirect to the clean path) and rewrites a
// 404 or 405 as a JSON error.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request, h http.Handler) {
	probe := &probe{header: http.Header{}}
	h.ServeHTTP(probe, r)
	switch probe.status {
	case http.StatusNotFound:
		s.writeError(w, r, errorf(codeNotFound, "no such path %s", quote(r.URL.Path)))
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", probe.header.Get("Allow"))
		s.writeError(w, r, &Error{Code: codeUnimplemented, HTTPStatus: http.StatusMethodNotAllowed,
			Message: "method " + r.Method + " is not allowed on " + quote(r.URL.Path) + "; allowed: " + probe.header.Get("Allow")})
	default:
		// A redirect to the cleaned path: pass it on.
		for k, v := range probe.header {
			w.Header()[k] = v
		}
		w.WriteHeader(probe.status)
	}
}

// probe captures what the mux's own handlers answer.
type probe struct {
	header http.Header
	status int
}

func (p *probe) Header() http.Header { return p.header }
func (p *probe) WriteHeader(status int) {
	if p.status == 0 {
		p.status = status
	}
}
func (p *probe) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return len(b), nil
}

// recorder remembers the status written, for metrics and logs.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// authenticated checks the HTTP basic credentials (API_ID:API_SECRET) of
// every request before h, and writes h's error.
func (s *Server) authenticated(h func(*Server, http.ResponseWriter, *http.Request, query.Account) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok || id == "" || len(id) > 128 || len(secret) > 256 {
			s.writeError(w, r, errorf(codeUnauthenticated, "missing or invalid API credentials: use HTTP basic auth with API_ID:API_SECRET"))
			return
		}
		select {
		case s.turns <- struct{}{}:
			defer func() { <-s.turns }()
		case <-r.Context().Done():
			return // the client has gone
		}
		acct, err := s.store.Authenticate(r.Context(), id, secret)
		if errors.Is(err, query.ErrUnauthenticated) {
			err = errorf(codeUnauthenticated, "missing or invalid API credentials: use HTTP basic auth with API_ID:API_SECRET")
		}
		if err == nil {
			err = h(s, w, r, acct)
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}

// healthz answers 200 when the database answers, else 503.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		s.log.WarnContext(ctx, "health check failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// tokens returns the page-token codec, reading its key from the store on
// first use (so that the API starts while the database is away).
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
