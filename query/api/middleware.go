package api

// What every request goes through: its id, bounds, routing, metrics and
// access log line (ServeHTTP).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/netip"
	"path"
	"strconv"
	"strings"
)

type ctxKey struct{}

// reqInfo is what ServeHTTP logs of a request that the handlers learn.
type reqInfo struct {
	id     string     // the request id
	client netip.Addr // the client's address
	apiID  string     // the API id of the credentials, once read
	turn   bool       // the request holds a store turn (Server.turns)
	// turnKey is whose turns the request takes: its API id.
	turnKey string
	// leave ends the request's place among its key's requests at once
	// (Server.inFlight), once its answer is written; nil when it has none.
	leave func()
	// held keeps what the handler writes while it holds a turn.
	held *heldWriter
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
