package site

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/time/rate"

	"github.com/wharfhq/wharf/internal/clientip"
	"github.com/wharfhq/wharf/publish"
)

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
	// and /static/; nil answers 404 there.
	Page http.Handler
	// Logger receives the access log and errors; nil discards them.
	Logger *slog.Logger
	// Clock is the time tokens, rate limits and the tree cache use; nil is time.Now.
	Clock func() time.Time
	// Presign answers canonical downloads with a 302 to a short-lived
	// presigned URL when the store implements publish.Presigner (S3).
	Presign bool
	// PresignExpiry is how long a presigned URL is valid; 0 means 5 minutes.
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
		now:      cfg.Clock,
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
		s.expiry = 5 * time.Minute
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
	s.ipLimit = newLimiter(cfg.RateIP, cfg.BurstIP, cfg.LimitBuckets, s.now)
	s.keyLimit = newLimiter(cfg.RateKey, cfg.BurstKey, cfg.LimitBuckets, s.now)
	s.clients = cfg.TrustedProxies
	s.noMetrics = cfg.MetricsElsewhere
	return s, nil
}

// request is the state of one request that the access log reports.
type request struct {
	*recorder
	who       string            // the principal, "" when anonymous
	principal *Principal        // who, when authenticated
	client    netip.Addr        // the client's address (behind trusted proxies)
	download  *publish.Artifact // the artifact a canonical download asked for
}

// ServeHTTP answers every endpoint of the download server.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	s.metrics.inflight.Inc()
	defer s.metrics.inflight.Dec()
	req := &request{recorder: &recorder{ResponseWriter: w}, client: s.clients.ClientAddr(r)}
	t, err := parsePath(r.URL.EscapedPath())
	route := t.kind.route(t.sig)
	if err != nil {
		route = "bad_path"
	}
	defer func() {
		status := req.status
		if status == 0 {
			status = http.StatusOK
		}
		elapsed := time.Since(start)
		code := strconv.Itoa(status)
		s.metrics.requests.WithLabelValues(route, code).Inc()
		s.metrics.bytes.WithLabelValues(route).Add(float64(req.bytes))
		s.metrics.duration.WithLabelValues(route).Observe(elapsed.Seconds())
		if req.download != nil {
			s.recordDownload(r, req, status)
		}
		// The record is built by hand: slog.Logger would capture the caller's
		// program counter, a cost per request the access log does not need.
		if h := s.log.Handler(); h.Enabled(r.Context(), slog.LevelInfo) {
			rec := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
			rec.AddAttrs(
				slog.String("method", r.Method),
				slog.String("path", r.URL.EscapedPath()),
				slog.String("route", route),
				slog.Int("status", status),
				slog.Int64("bytes", req.bytes),
				slog.Duration("duration", elapsed),
				slog.String("remote", clientString(req.client, r)),
				slog.String("principal", req.who),
			)
			_ = h.Handle(r.Context(), rec)
		}
	}()
	if err != nil {
		s.writeError(req, r, badRequest("malformed path: dot segments, encoded slashes, backslashes and control characters are refused"))
		return
	}
	// The auth endpoint is asked by a proxy (nginx, Caddy) for all its
	// clients: limiting it by address would limit them all together when
	// the proxy is not a --trusted-proxy.
	if t.kind != kindHealth && t.kind != kindMetrics && t.kind != kindAuth {
		if ok, wait := s.ipLimit.allow(limitKey(req.client, r)); !ok {
			req.Header().Set("Retry-After", fmt.Sprint(int(wait/time.Second)+1))
			s.writeError(req, r, tooMany(wait))
			return
		}
	}
	if t.kind == kindPage {
		if s.page == nil {
			s.writeError(req, r, notFound("not found"))
			return
		}
		s.page.ServeHTTP(req, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		req.Header().Set("Allow", "GET, HEAD")
		s.writeError(req, r, &httpError{http.StatusMethodNotAllowed, codeUnimplemented, "only GET and HEAD are served here", nil})
		return
	}
	switch t.kind {
	case kindHealth:
		err = s.health(req, r)
	case kindMetrics:
		if s.noMetrics {
			err = notFound("not found: metrics are served on their own listener")
			break
		}
		s.MetricsHandler().ServeHTTP(req, r)
	case kindAuth:
		err = s.authRequest(req, r)
	case kindTop:
		err = s.top(req, r, t.key)
	case kindShort:
		err = s.short(req, r, t)
	case kindCanonical:
		err = s.canonical(req, r, t)
	default:
		err = notFound("not found: see " + publish.KeyManifest + " for what is published")
	}
	if err != nil {
		s.writeError(req, r, err)
	}
}

// MetricsHandler serves the server's metrics in the Prometheus format.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{})
}

// recordDownload counts a download of an artifact (a GET answered with the
// file, part of it, or a presigned redirect) by artifact, build and
// organisation, and writes an audit line for every authenticated
// download attempt, answered or refused: who (organisations, key or user),
// what, how many bytes, which status. A vendor sees who took what and
// notices a leaked key by its volume or its refusals.
func (s *Server) recordDownload(r *http.Request, req *request, status int) {
	a := req.download
	orgs := "anonymous"
	if p := req.principal; p != nil {
		orgs = strings.Join(p.Orgs, ",")
	}
	if r.Method == http.MethodGet && (status == http.StatusOK || status == http.StatusPartialContent || status == http.StatusFound) {
		s.metrics.downloads.WithLabelValues(a.Name, a.Build, orgs).Inc()
	}
	p := req.principal
	if p == nil {
		return
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "download",
		slog.String("orgs", orgs),
		slog.String("kind", p.Kind),
		slog.String("id", p.Name),
		slog.String("artifact", a.Key),
		slog.String("method", r.Method),
		slog.Int("status", status),
		slog.Int64("bytes", req.bytes),
		slog.String("remote", clientString(req.client, r)),
	)
}

// limitKey is what the per-address limit counts: the client's address
// group (an IPv4 address, an IPv6 /64, which one customer holds whole),
// or the peer as written when it does not parse.
func limitKey(client netip.Addr, r *http.Request) string {
	if !client.IsValid() {
		return r.RemoteAddr
	}
	return clientip.Group(client).String()
}

// clientString is the client's address for the logs.
func clientString(client netip.Addr, r *http.Request) string {
	if !client.IsValid() {
		return r.RemoteAddr
	}
	return client.String()
}

// contentTypes of the top-level objects.
var contentTypes = map[string]string{
	publish.KeyLatest:    "text/plain; charset=utf-8",
	publish.KeyPreview:   "text/plain; charset=utf-8",
	publish.KeyPublicKey: "application/x-pem-file",
	publish.KeyInstall:   "text/x-shellscript; charset=utf-8",
	publish.KeyManifest:  "application/json",
}

// top serves a top-level object: no auth, revalidated on every use.
func (s *Server) top(w *request, r *http.Request, key string) error {
	w.Header().Set("Cache-Control", publish.CacheControl(key, ""))
	return s.serveObject(w, r, key, contentTypes[key], "")
}

// short answers a short URL with a 302 to the canonical URL of the
// artifact, or of its signature.
func (s *Server) short(w *request, r *http.Request, t target) error {
	snap, err := s.tree.get(r.Context())
	if err != nil {
		return storeError(err)
	}
	rel, err := snap.release(t.tag)
	if err != nil {
		return err
	}
	a, ok := rel.Artifact(t.name, t.build)
	if !ok {
		return notFound(fmt.Sprintf("%s has no %s for build %s", rel.Version, t.name, t.build))
	}
	loc := "/" + a.Key
	if t.sig {
		loc += "/sig"
	}
	found(w, loc, publish.CacheRevalidate)
	return nil
}

// found answers 302 to loc, empty, with the given Cache-Control.
func found(w http.ResponseWriter, loc, cacheControl string) {
	h := w.Header()
	h.Set("Location", loc)
	h.Set("Cache-Control", cacheControl)
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusFound)
}

// canonical serves /bin/... and /img/...: an artifact (with its access
// check), its signature, or the release's SHA256SUMS (no auth).
func (s *Server) canonical(w *request, r *http.Request, t target) error {
	snap, err := s.tree.get(r.Context())
	if err != nil {
		return storeError(err)
	}
	key := t.key
	version := strings.Split(key, "/")[1]
	if _, ok := snap.manifest.Find(version); !ok {
		return notFound(fmt.Sprintf("version %s has not been published", version))
	}
	file := key[strings.LastIndexByte(key, '/')+1:]
	isSums := func(k string) bool { return strings.HasSuffix(k, "/SHA256SUMS") }
	// Signatures and checksums are public and, like every versioned
	// object, never change.
	switch {
	case t.sig:
		if _, ok := snap.byKey[key]; !ok && !isSums(key) {
			return notFound("no such download: " + key)
		}
		w.Header().Set("Cache-Control", publish.CacheImmutable)
		return s.serveObject(w, r, publish.SigKey(key), "text/plain; charset=utf-8", "")
	case strings.HasSuffix(key, ".sig"):
		base := strings.TrimSuffix(key, ".sig")
		if _, ok := snap.byKey[base]; !ok && !isSums(base) {
			return notFound("no such signature: " + key)
		}
		w.Header().Set("Cache-Control", publish.CacheImmutable)
		return s.serveObject(w, r, key, "text/plain; charset=utf-8", "")
	case isSums(key):
		w.Header().Set("Cache-Control", publish.CacheImmutable)
		return s.serveObject(w, r, key, "text/plain; charset=utf-8", "")
	}
	a, ok := snap.byKey[key]
	if !ok {
		return notFound("no such download: " + key)
	}
	w.download = &a
	if err := s.authorize(w, r, a.Access); err != nil {
		return err
	}
	if s.presigner != nil {
		u, err := s.presigner.PresignGet(r.Context(), key, file, s.expiry)
		if err != nil {
			return storeError(err)
		}
		found(w, u, "no-store")
		return nil
	}
	ctype := "application/gzip"
	if a.Kind == publish.KindImage {
		ctype = "application/x-tar"
	}
	w.Header().Set("Cache-Control", publish.CacheControl(key, a.Access))
	return s.serveObject(w, r, key, ctype, file)
}

// serveObject streams an object with http.ServeContent (HEAD, Range,
// If-None-Match, If-Modified-Since). A non-empty attachment names the file
// in Content-Disposition and gives the transfer a time budget by its size.
func (s *Server) serveObject(w *request, r *http.Request, key, ctype, attachment string) error {
	obj, err := s.store.Open(r.Context(), key)
	if err != nil {
		return storeError(err)
	}
	defer obj.Close()
	info := obj.Info()
	h := w.Header()
	if info.ETag != "" {
		h.Set("ETag", info.ETag)
	}
	if ctype != "" {
		h.Set("Content-Type", ctype)
	}
	h.Set("X-Content-Type-Options", "nosniff")
	if attachment != "" {
		h.Set("Content-Disposition", `attachment; filename="`+attachment+`"`)
		// The deadline is of the socket, so it is wall-clock time.
		budget := s.grace + time.Duration(info.Size/s.minRate)*time.Second
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(budget))
	}
	// An object backed by a file (publish/dir) goes out with sendfile(2):
	// the recorder forwards ReadFrom, and net/http hands the object to the
	// TCP connection, which takes any syscall.Conn.
	var out http.ResponseWriter = w
	if _, ok := obj.(syscall.Conn); !ok {
		out = bigCopy{w, &s.buffers}
	}
	http.ServeContent(out, r, "", info.ModTime, obj)
	return nil
}

// bigCopy streams an object that is not a file (S3) in 256 KiB writes
// rather than net/http's 32 KiB: a quarter of the system calls.
type bigCopy struct {
	*request
	buffers *sync.Pool // of *[]byte
}

func (b bigCopy) ReadFrom(src io.Reader) (int64, error) {
	buf, ok := b.buffers.Get().(*[]byte)
	if !ok {
		nb := make([]byte, 256<<10)
		buf = &nb
	}
	defer b.buffers.Put(buf)
	return io.CopyBuffer(struct{ io.Writer }{b.request}, src, *buf)
}

// authorize checks that the request may download an artifact of an
// access class, and takes a token from the credential's rate limit.
func (s *Server) authorize(w *request, r *http.Request, access string) error {
	if access == publish.AccessPublic {
		return nil
	}
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	if p == nil {
		return fmt.Errorf("%w: no credentials", ErrUnauthenticated)
	}
	w.who = p.Kind + ":" + p.Name
	w.principal = p
	if ok, wait := s.keyLimit.allow(w.who); !ok {
		w.Header().Set("Retry-After", fmt.Sprint(int(wait/time.Second)+1))
		return tooMany(wait)
	}
	if !p.Allows(access) {
		return ErrForbidden
	}
	return nil
}

// principal finds who the request is authenticated as: the Authorization
// header (Bearer access token, or Basic with an API key as the user name
// or password), else the browser session. It is nil for an anonymous
// request; a header that does not check out is ErrUnauthenticated.
func (s *Server) principal(r *http.Request) (*Principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		if s.sessions != nil {
			if p, ok := s.sessions.Principal(r); ok && (p.Expires.IsZero() || s.now().Before(p.Expires)) {
				return &p, nil
			}
		}
		return nil, nil
	}
	if s.auth == nil {
		return nil, fmt.Errorf("%w: this server checks no credentials", ErrUnauthenticated)
	}
	scheme, cred, _ := strings.Cut(h, " ")
	var p Principal
	var err error
	switch strings.ToLower(scheme) {
	case "bearer":
		p, err = s.auth.Token(r.Context(), strings.TrimSpace(cred))
	case "basic":
		user, pass, ok := r.BasicAuth()
		if !ok {
			return nil, fmt.Errorf("%w: malformed basic credentials", ErrUnauthenticated)
		}
		key := user
		if key == "" {
			key = pass
		}
		p, err = s.auth.APIKey(r.Context(), key)
	default:
		return nil, fmt.Errorf("%w: unknown scheme %.20q", ErrUnauthenticated, scheme)
	}
	if errors.Is(err, ErrUnauthenticated) || errors.Is(err, context.Canceled) {
		return nil, err
	}
	if err != nil {
		return nil, &httpError{http.StatusServiceUnavailable, codeUnavailable, "credentials cannot be checked now; try again later", err}
	}
	return &p, nil
}

// health answers 200 when the store is there and holds a published tree,
// and the auth database answers; else 503 saying which is not. A
// directory store that is missing or was deleted, or a bucket that does
// not answer, is unhealthy, not an empty tree.
func (s *Server) health(w *request, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if c, ok := s.store.(publish.Checker); ok {
		if err := c.Check(ctx); err != nil {
			return &httpError{http.StatusServiceUnavailable, codeUnavailable, "the release store is unavailable: " + err.Error(), err}
		}
	}
	_, err := s.store.Stat(ctx, publish.KeyManifest)
	if errors.Is(err, publish.ErrNotFound) {
		return &httpError{http.StatusServiceUnavailable, codeUnavailable, "the release store holds no published tree (no " + publish.KeyManifest + "): wrong --store, or nothing published yet", err}
	}
	if err != nil {
		return storeError(err)
	}
	if p, ok := s.auth.(interface{ Ping(context.Context) error }); ok {
		if err := p.Ping(ctx); err != nil {
			return &httpError{http.StatusServiceUnavailable, codeUnavailable, "the auth database is unavailable", err}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, err = io.WriteString(w, "{\"status\":\"ok\"}\n")
	return err
}
