package site

import (
	"fmt"
	"net/http"
	"time"

	"github.com/wharfhq/wharf/publish"
)

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
	defer s.observe(r, req, route, start)
	fail := s.writeError
	if t.kind == kindRegistry {
		fail = s.writeRegistryError
	}
	if err != nil {
		fail(req, r, badRequest("malformed path: dot segments, encoded slashes, backslashes and control characters are refused"))
		return
	}
	// The auth endpoint is asked by a proxy (nginx, Caddy) for all its
	// clients: limiting it by address would limit them all together when
	// the proxy is not a --trusted-proxy.
	if t.kind != kindHealth && t.kind != kindMetrics && t.kind != kindAuth {
		if ok, wait := s.ipLimit.allow(limitKey(req.client, r)); !ok {
			req.Header().Set("Retry-After", fmt.Sprint(int(wait/time.Second)+1))
			fail(req, r, tooMany(wait))
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
		fail(req, r, &httpError{http.StatusMethodNotAllowed, codeUnimplemented, "only GET and HEAD are served here", nil})
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
	case kindRegistry:
		if t.registry.image == "-" {
			err = &registryError{http.StatusNotFound, "NAME_UNKNOWN", "not a path of the registry's read API"}
			break
		}
		err = s.registry(req, r, t)
	default:
		err = notFound("not found: see " + publish.KeyManifest + " for what is published")
	}
	if err != nil {
		fail(req, r, err)
	}
}

// contentTypes of the top-level objects.
var contentTypes = map[string]string{
	publish.KeyLatest:                   "text/plain; charset=utf-8",
	publish.KeyPreview:                  "text/plain; charset=utf-8",
	publish.KeyPublicKey:                "application/x-pem-file",
	publish.KeyInstall:                  "text/x-shellscript; charset=utf-8",
	publish.KeyManifest:                 "application/json",
	publish.KeyChannel:                  "text/plain; charset=utf-8",
	publish.SigKey(publish.KeyManifest): "text/plain; charset=utf-8",
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
