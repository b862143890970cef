package site

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/wharfhq/wharf/publish"
)

// Headers that name the request a proxy asks about: nginx's auth_request
// sends what its configuration sets (wharf hosting nginx sets both), Caddy's
// forward_auth sends X-Forwarded-Uri and X-Forwarded-Method.
const (
	headerOriginalURI = "X-Original-URI"
	headerForwardURI  = "X-Forwarded-Uri"
)

// authRequest answers whether the credentials of r (Authorization header
// or browser session) may download the path the proxy names: 204 when
// they may, 401 with WWW-Authenticate when they are missing or invalid,
// 403 when their level is too low or the path is no published download.
// It never opens an object: the proxy serves the bytes. Those are the only
// answers nginx's auth_request passes on (anything else becomes 500), so a
// path that is not a download is refused with 403 rather than 404.
func (s *Server) authRequest(w *request, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	orig := r.Header.Get(headerOriginalURI)
	if orig == "" {
		orig = r.Header.Get(headerForwardURI)
	}
	if orig == "" {
		return badRequest("ask about a path in " + headerOriginalURI + " or " + headerForwardURI)
	}
	path, _, _ := strings.Cut(orig, "?")
	t, err := parsePath(path)
	if err != nil {
		return denied("malformed path: dot segments, encoded slashes, backslashes and control characters are refused")
	}
	switch {
	case t.kind == kindTop, t.kind == kindShort:
		return allowed(w)
	case t.kind != kindCanonical:
		return denied("not a download: " + path)
	}
	snap, err := s.tree.get(r.Context())
	if err != nil {
		return storeError(err)
	}
	version := strings.Split(t.key, "/")[1]
	if _, ok := snap.manifest.Find(version); !ok {
		return denied(fmt.Sprintf("version %s has not been published", version))
	}
	if t.sig || strings.HasSuffix(t.key, ".sig") || strings.HasSuffix(t.key, "/SHA256SUMS") {
		return allowed(w) // signatures and checksums need no credentials
	}
	a, ok := snap.byKey[t.key]
	if !ok {
		return denied("not a published download: " + t.key)
	}
	if a.Access == publish.AccessPublic {
		return allowed(w)
	}
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	if p == nil {
		return fmt.Errorf("%w: no credentials", ErrUnauthenticated)
	}
	w.who = p.Kind + ":" + p.Name
	if !p.Allows(a.Access) {
		return ErrForbidden
	}
	return allowed(w)
}

// allowed answers 204: the proxy may serve the file.
func allowed(w http.ResponseWriter) error {
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// denied is a 403 for a path that is not a download the proxy may serve.
func denied(msg string) error {
	return &httpError{http.StatusForbidden, codePermissionDenied, msg, nil}
}
