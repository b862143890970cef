package site

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/wharfhq/wharf/internal/clientip"
	"github.com/wharfhq/wharf/publish"
)

// DefaultPresignExpiry is how long a presigned URL is valid unless
// Config.PresignExpiry says otherwise: long enough for a client to follow
// the redirect (and a slow start to reach the bucket), short enough that a
// URL copied before its key was revoked stops working soon after.
const DefaultPresignExpiry = 30 * time.Second

// Config configures a Server. Store is required; every other field has a
// usable zero value.
type Config struct {
	// Store holds the published tree.
	Store publish.Store
	// Auth checks access tokens and API keys; nil refuses every credential,
	// so only public artifacts can be downloaded.
	Auth Authenticator
	// Sessions finds the browser session of a request, consulted when the
	// request has no Authorization header; may be nil.
	Sessions Sessions
	// Page serves the browser page: GET /, GET|POST /login, POST /logout
	// and /static/; nil answers 404 there. A *Page lists the releases from
	// the server's own cache of Store (RefreshInterval), so the page and
	// the downloads never disagree.
	Page http.Handler
	// Logger receives the access log and errors; nil discards them.
	Logger *slog.Logger
	// Now is the clock tokens, rate limits and the tree cache use; nil is
	// time.Now.
	Now func() time.Time
	// Presign answers canonical downloads with a 302 to a short-lived
	// presigned URL when the store implements publish.Presigner (S3).
	Presign bool
	// PresignExpiry is how long a presigned URL is valid; 0 means
	// DefaultPresignExpiry. Whoever holds the URL can download until then,
	// even after the credential that obtained it is revoked.
	PresignExpiry time.Duration
	// Metrics is where the server registers its collectors and what
	// /metrics serves; nil makes a registry of the server's own.
	Metrics *prometheus.Registry
	// MetricsElsewhere makes /metrics answer 404 here: the metrics are
	// served on a listener of their own (Server.MetricsHandler), so they
	// need not be public.
	MetricsElsewhere bool
	// RefreshInterval bounds how stale the cached manifest and pointers may
	// be (a Stat of each per interval); 0 checks them on every request.
	RefreshInterval time.Duration
	// CredentialTTL is how long the auth endpoint (a proxy's question
	// about a download) and the registry's API (a pull's many requests:
	// manifests, config, layers) trust a checked Authorization header
	// without asking Auth again: a revoked key, an organisation's lowered
	// level or a removed user is refused within it on every server
	// sharing the database. 0 means 500 ms; negative asks every time.
	// Other downloads wharf serves itself always ask.
	CredentialTTL time.Duration
	// RateIP and BurstIP limit requests per client address; 0 is no limit.
	RateIP  rate.Limit
	BurstIP int
	// RateKey and BurstKey limit authenticated downloads per credential
	// (API key or user); 0 is no limit.
	RateKey  rate.Limit
	BurstKey int
	// LimitBuckets bounds each rate limit's table of buckets (least
	// recently used dropped first); 0 means 100,000.
	LimitBuckets int
	// TrustedProxies finds the client address behind reverse proxies
	// (X-Forwarded-For from trusted peers only), for the per-address limit
	// and the logs; nil trusts no proxy: the client is the peer.
	TrustedProxies *clientip.Resolver
	// MinRate is the slowest a download may go, in bytes per second, before
	// the connection is cut (with DownloadGrace on top); 0 means 16 KiB/s.
	MinRate int64
	// DownloadGrace is added to a download's time budget; 0 means 1 minute.
	DownloadGrace time.Duration
}

// Server is the download server: an http.Handler over a published tree.
type Server struct {
	store     publish.Store
	auth      Authenticator
	sessions  Sessions
	page      http.Handler
	log       *slog.Logger
	now       func() time.Time
	presigner publish.Presigner
	expiry    time.Duration
	tree      *releaseTree
	metrics   *metrics
	gatherer  prometheus.Gatherer
	ipLimit   *limiter
	keyLimit  *limiter
	clients   *clientip.Resolver
	noMetrics bool
	creds     *credCache // nil: every request asks Auth
	minRate   int64
	grace     time.Duration
	buffers   sync.Pool // copy buffers of bigCopy
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("site: Config.Store is required")
	}
	s := &Server{
		store:    cfg.Store,
		auth:     cfg.Auth,
		sessions: cfg.Sessions,
		page:     cfg.Page,
		log:      cfg.Logger,
		now:      cfg.Now,
		expiry:   cfg.PresignExpiry,
		minRate:  cfg.MinRate,
		grace:    cfg.DownloadGrace,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.expiry <= 0 {
		s.expiry = DefaultPresignExpiry
	}
	if s.minRate <= 0 {
		s.minRate = 16 << 10
	}
	if s.grace <= 0 {
		s.grace = time.Minute
	}
	if cfg.Presign {
		p, ok := cfg.Store.(publish.Presigner)
		if !ok {
			return nil, fmt.Errorf("site: presigned downloads need a store that presigns (S3); %T does not", cfg.Store)
		}
		s.presigner = p
	}
	reg := cfg.Metrics
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("site: register metrics: %w", err)
	}
	s.metrics, s.gatherer = m, reg
	s.tree = &releaseTree{store: cfg.Store, now: s.now, interval: cfg.RefreshInterval, log: s.log}
	// The page lists what the downloads serve: one cache, one reading order.
	if pg, ok := cfg.Page.(*Page); ok {
		pg.useTree(s.tree)
	}
	s.ipLimit = newLimiter(cfg.RateIP, cfg.BurstIP, cfg.LimitBuckets, s.now)
	s.keyLimit = newLimiter(cfg.RateKey, cfg.BurstKey, cfg.LimitBuckets, s.now)
	s.clients = cfg.TrustedProxies
	s.noMetrics = cfg.MetricsElsewhere
	if ttl := cfg.CredentialTTL; ttl >= 0 {
		if ttl == 0 {
			ttl = defaultCredTTL
		}
		s.creds = newCredCache(ttl, 10000, s.now)
	}
	return s, nil
}
