package site

import (
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wharfhq/wharf/internal/clientip"
	"github.com/wharfhq/wharf/publish"
)

// request is the state of one request that the access log reports.
type request struct {
	*recorder
	who       string            // the principal, "" when anonymous
	principal *Principal        // who, when authenticated
	client    netip.Addr        // the client's address (behind trusted proxies)
	download  *publish.Artifact // the artifact a canonical download asked for
	// proxied is the method of the client's request a proxy asked the auth
	// endpoint about ("" for a request wharf serves itself): the download
	// is then the proxy's, allowed by a 204.
	proxied string
}

// observe counts a request in the metrics, records a download, and
// writes the access log line, once the request is answered.
func (s *Server) observe(r *http.Request, req *request, route string, start time.Time) {
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
}

// MetricsHandler serves the server's metrics in the Prometheus format.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{})
}

// recordDownload counts a download of an artifact (a GET answered with the
// file, part of it, or a presigned redirect; or, asked by a proxy, a GET
// the auth endpoint allowed) by artifact, build and organisation, and
// writes an audit line for every authenticated download attempt, answered
// or refused, served by wharf or by a proxy: who (organisations, key or
// user), what, how many bytes, which status and decision. A vendor sees
// who took what and notices a leaked key by its volume or its refusals.
func (s *Server) recordDownload(r *http.Request, req *request, status int) {
	a := req.download
	orgs := "anonymous"
	if p := req.principal; p != nil {
		orgs = strings.Join(p.Orgs, ",")
	}
	method, via := r.Method, "wharf"
	allowed := status == http.StatusOK || status == http.StatusPartialContent || status == http.StatusFound || status == http.StatusNotModified
	if req.proxied != "" {
		method, via, allowed = req.proxied, "proxy", status == http.StatusNoContent
	}
	if method == http.MethodGet && allowed && status != http.StatusNotModified {
		s.metrics.downloads.WithLabelValues(a.Name, a.Build, orgs).Inc()
	}
	p := req.principal
	if p == nil {
		return
	}
	decision := "refused"
	if allowed {
		decision = "allowed"
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "download",
		slog.String("orgs", orgs),
		slog.String("kind", p.Kind),
		slog.String("id", p.Name),
		slog.String("artifact", a.Key),
		slog.String("build", a.Build),
		slog.String("method", method),
		slog.Int("status", status),
		slog.String("decision", decision),
		slog.String("via", via),
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
