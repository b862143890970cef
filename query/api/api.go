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
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wharfhq/wharf/internal/clientip"
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
	limited  *prometheus.CounterVec

	clientIP      *clientip.Resolver
	failsByClient *buckets[netip.Prefix]
	failsByKey    *buckets[string]
	requestsByKey *buckets[string]

	mu  sync.Mutex
	key []byte // page-token key, read from the store on first use

	bufs bufPool // response buffers of transaction pages

	heads headCache // the stored head of each chain, for confirmations

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
	{"GET /v1/chains/{chain}/addresses/{address}", (*Server).getSubscription},
	{"GET /v1/addresses", (*Server).listAll},
	{"GET /v1/chains/{chain}/addresses", (*Server).listChain},
	{"GET /v1/chains/{chain}/addresses/{address}/balances", withState((*Server).balances)},
	{"GET /v1/chains/{chain}/addresses/{address}/transactions", withState((*Server).transactions)},
	{"GET /v1/chains/{chain}/transactions/{hash}", (*Server).transaction},
	{"GET /v1/chains/{chain}/addresses/{address}/balance_changes", withState((*Server).balanceChanges)},
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
	n := cfg.MaxInFlight
	if n <= 0 {
		n = DefaultMaxInFlight
	}
	s.turns = make(chan struct{}, n)
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

// reqInfo is what ServeHTTP logs of a request that the handlers learn.
type reqInfo struct {
	id     string     // the request id
	client netip.Addr // the client's address
	apiID  string     // the API id of the credentials, once read
}

func info(r *http.Request) *reqInfo {
	ri, _ := r.Context().Value(ctxKey{}).(*reqInfo)
	if ri == nil {
		return &reqInfo{}
	}
	return ri
}

// requestID returns the id ServeHTTP gave r.
func requestID(r *http.Request) string { return info(r).id }

// orDefault is l, or def when l is zero; a negative rate is no limit.
func orDefault(l, def Limit) Limit {
	switch {
	case l == Limit{}:
		return def
	case l.Rate < 0:
		return Limit{}
	}
	return l
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
	ri := &reqInfo{id: newRequestID(), client: s.clientIP.ClientAddr(r)}
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, ri))
	w.Header().Set("X-Request-Id", ri.id)
	rw := &recorder{ResponseWriter: w, status: http.StatusOK}

	route := "unmatched"
	switch {
	case len(r.URL.EscapedPath()) > maxPathLen:
		s.writeError(rw, r, errorf(codeInvalidArgument, "request path longer than %d bytes", maxPathLen))
	case len(r.URL.RawQuery) > maxQueryLen:
		s.writeError(rw, r, errorf(codeInvalidArgument, "query string longer than %d bytes", maxQueryLen))
	case !isClean(r.URL.Path):
		// The mux would redirect to the clean path, with an HTML body.
		s.writeError(rw, r, errorf(codeNotFound, "no such path %s", quote(r.URL.Path)))
	default:
		h, pattern := s.mux.Handler(r)
		if pattern == "" {
			s.noRoute(rw, r, h)
			break
		}
		// The label is the path pattern: the method is a label of its own.
		_, route, _ = strings.Cut(pattern, " ")
		// The mux matches again, setting r's path values.
		s.mux.ServeHTTP(rw, r)
	}
	d := s.now().Sub(start)
	s.requests.WithLabelValues(methodLabel(r.Method), route, strconv.Itoa(rw.status)).Inc()
	s.duration.WithLabelValues(route).Observe(d.Seconds())
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", slog.String("request_id", ri.id),
		slog.String("method", r.Method), slog.String("route", route), slog.Int("status", rw.status),
		slog.Duration("duration", d), slog.String("api_id", ri.apiID), slog.String("client", ri.client.String()))
}

// isClean reports whether p is in its canonical form, the one ServeMux
// matches without a redirect: rooted, no empty, "." or ".." segment.
func isClean(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if p[len(p)-1] == '/' && c != "/" {
		c += "/"
	}
	return c == p
}

// methodLabel bounds the method label to the methods HTTP defines.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "other"
}

// noRoute answers what the mux did not match: it lets the mux decide
// (404, 405 with Allow, or a redirect to the clean path) and answers a
// JSON error: 405 as it is, anything else 404. An unclean path such as
// //v1/addresses is not the API's, and the mux's redirect (an HTML body)
// would send credentials to a path the client did not ask for.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request, h http.Handler) {
	probe := &probe{header: http.Header{}}
	h.ServeHTTP(probe, r)
	if probe.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", probe.header.Get("Allow"))
		s.writeError(w, r, &Error{Code: codeUnimplemented, HTTPStatus: http.StatusMethodNotAllowed,
			Message: "method " + r.Method + " is not allowed on " + quote(r.URL.Path) + "; allowed: " + probe.header.Get("Allow")})
		return
	}
	s.writeError(w, r, errorf(codeNotFound, "no such path %s", quote(r.URL.Path)))
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
// every request before h, and writes h's error. The limits come first:
// a client or key over its limit is answered 429 without a database turn.
func (s *Server) authenticated(h func(*Server, http.ResponseWriter, *http.Request, query.Account) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := s.authenticate(w, r, h)
		if err != nil && r.Context().Err() != nil && errors.Is(err, r.Context().Err()) {
			return // the client has gone; nobody reads an answer
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}

var errBadCredentials = errorf(codeUnauthenticated, "missing or invalid API credentials: use HTTP basic auth with API_ID:API_SECRET")

func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, h func(*Server, http.ResponseWriter, *http.Request, query.Account) error) error {
	id, secret, ok := r.BasicAuth()
	if !ok || id == "" || len(id) > 128 || len(secret) > 256 {
		return errBadCredentials
	}
	ri := info(r)
	ri.apiID = id
	client := clientip.Group(ri.client)
	if wait := s.failsByClient.wait(client, s.now()); wait > 0 {
		s.limited.WithLabelValues("auth_failures_client").Inc()
		return tooMany(wait, "too many failed authentications from %s", client)
	}
	if wait := s.requestsByKey.wait(id, s.now()); wait > 0 {
		s.limited.WithLabelValues("key_rate").Inc()
		return tooMany(wait, "too many requests for API key %s", quote(id))
	}
	select {
	case s.turns <- struct{}{}:
		defer func() { <-s.turns }()
	case <-r.Context().Done():
		return r.Context().Err() // the client has gone
	}
	acct, err := s.store.Authenticate(r.Context(), id, secret)
	if errors.Is(err, query.ErrUnauthenticated) {
		now := s.now()
		byClient, byKey := s.failsByClient.take(client, now), s.failsByKey.take(id, now)
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "authentication failed", slog.String("request_id", ri.id),
			slog.String("api_id", id), slog.String("client", ri.client.String()))
		switch {
		case byClient > 0:
			s.limited.WithLabelValues("auth_failures_client").Inc()
			return tooMany(byClient, "too many failed authentications from %s", client)
		case byKey > 0:
			s.limited.WithLabelValues("auth_failures_key").Inc()
			return tooMany(byKey, "too many failed authentications for API key %s", quote(id))
		}
		return errBadCredentials
	}
	if err != nil {
		return err
	}
	if wait := s.requestsByKey.take(id, s.now()); wait > 0 {
		s.limited.WithLabelValues("key_rate").Inc()
		return tooMany(wait, "too many requests for API key %s", quote(id))
	}
	return h(s, w, r, acct)
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
