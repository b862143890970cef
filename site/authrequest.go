package site

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Headers that name the request a proxy asks about. Each proxy kind has
// one, fixed by the configuration wharf hosting generates: nginx's
// auth_request sends X-Original-URI (its configuration sets it to
// $request_uri and removes X-Forwarded-Uri), Caddy's forward_auth sends
// X-Forwarded-Uri (Caddy sets it; the configuration removes
// X-Original-URI). A proxy's subrequest carries the client's own headers
// too, so a request holding both with different values is one where the
// client wrote one of them: it is refused.
const (
	HeaderOriginalURI = "X-Original-URI"
	HeaderForwardURI  = "X-Forwarded-Uri"
	// HeaderReplay marks nginx's second question about a refused request,
	// asked for wharf's answer to pass on: it is not audited again.
	HeaderReplay = "X-Wharf-Replay"
	// HeaderPrincipal names, on a 204, who the download was allowed for
	// (apikey:ID or user:NAME, never the credential), for the proxy's
	// access log.
	HeaderPrincipal = "X-Wharf-Principal"
)

// authRequest answers whether the credentials of r (Authorization header
// or browser session) may download the artifact the proxy names: 204 when
// they may, 401 with WWW-Authenticate when they are missing or invalid,
// 403 when their level is too low or the path is no artifact, 404 for a
// file that is no published download (see unpublished).
// Only artifacts and their attestations are answered 204: the pointers, short URLs, signatures and
// checksums are served by the proxies without asking, so a question about
// one is not from them. It never opens an object: the proxy serves the
// bytes. Those are the only answers nginx's auth_request passes on
// (anything else becomes 500), so a path that is not a download is refused
// with 403 rather than 404.
func (s *Server) authRequest(w *request, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	orig, err := askedURI(r.Header)
	if err != nil {
		return err
	}
	path, _, _ := strings.Cut(orig, "?")
	t, err := parsePath(path)
	if err != nil {
		return denied("malformed path: dot segments, encoded slashes, backslashes and control characters are refused")
	}
	if t.kind != kindCanonical || t.sig || strings.HasSuffix(t.key, ".sig") || strings.HasSuffix(t.key, "/SHA256SUMS") {
		return denied("not an artifact: " + path)
	}
	snap, err := s.tree.get(r.Context())
	if err != nil {
		return storeError(err)
	}
	version := strings.Split(t.key, "/")[1]
	if _, ok := snap.manifest.Find(version); !ok {
		return unpublished(r.Header, fmt.Sprintf("version %s has not been published", version))
	}
	a, ok := snap.byKey[t.key]
	at, isAttestation := snap.attestations[t.key]
	if isAttestation {
		a, ok = at.of, true
	}
	if !ok {
		return unpublished(r.Header, "not a published download: "+t.key)
	}
	// The decision is a download's: counted, audited and limited per
	// credential as one wharf serves itself; once, not again when nginx
	// asks for the body of a refusal to pass on (its configuration removes
	// a client's own HeaderReplay from the first question). An attestation
	// is asked about with its artifact's access class, and is no download.
	if r.Header.Get(HeaderReplay) == "" {
		if !isAttestation {
			w.download = &a
		}
		w.proxied = askedMethod(r.Header)
	}
	if err := s.authorize(w, r, a.Access); err != nil {
		var he *httpError
		if errors.As(err, &he) && he.status == http.StatusTooManyRequests {
			// The proxies pass on only 401 and 403.
			return &httpError{http.StatusForbidden, codePermissionDenied, he.message, nil}
		}
		return err
	}
	if w.who != "" {
		w.Header().Set(HeaderPrincipal, w.who)
	}
	return allowed(w)
}

// askedMethod is the method of the client's request the proxy asks about:
// X-Original-Method (nginx) or X-Forwarded-Method (Caddy); GET when
// neither says.
func askedMethod(h http.Header) string {
	for _, k := range []string{"X-Original-Method", "X-Forwarded-Method"} {
		if m := h.Get(k); m != "" {
			return m
		}
	}
	return http.MethodGet
}

// askedURI is the request URI a proxy asks about: the one of
// X-Original-URI and X-Forwarded-Uri that is present, each at most once.
// Both present with different values, or one repeated, is refused (403):
// one of them came from the client.
func askedURI(h http.Header) (string, error) {
	orig, fwd := h.Values(HeaderOriginalURI), h.Values(HeaderForwardURI)
	switch {
	case len(orig) > 1 || len(fwd) > 1:
		return "", denied("the path asked about is given more than once")
	case len(orig) == 1 && len(fwd) == 1 && orig[0] != fwd[0]:
		return "", denied(HeaderOriginalURI + " and " + HeaderForwardURI + " differ: one of them is the client's")
	case len(orig) == 1:
		return orig[0], nil
	case len(fwd) == 1:
		return fwd[0], nil
	}
	return "", badRequest("ask about a path in " + HeaderOriginalURI + " or " + HeaderForwardURI)
}

// unpublished is the answer about a file of the tree that is no
// published download: 404, as wharf answers a download of it, so that a
// proxy does not tell a file that is there (a release being published)
// from one that is not. Only nginx's first question (auth_request, which
// turns anything but 2xx, 401 and 403 into 500) gets 403; nginx then asks
// again (HeaderReplay) for the answer it passes on, which is the 404.
func unpublished(h http.Header, msg string) error {
	if h.Get(HeaderReplay) == "" && h.Get(HeaderOriginalURI) != "" {
		return denied(msg)
	}
	return notFound(msg)
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
