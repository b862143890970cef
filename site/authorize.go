package site

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/wharfhq/wharf/publish"
)

// authorize checks that the request may download an artifact of an
// access class, and takes a token from the credential's rate limit.
func (s *Server) authorize(w *request, r *http.Request, access string) error {
	return s.authorizeLimited(w, r, access, true)
}

// authorizeLimited is authorize; a request that is part of a download
// already counted (a registry pull's blobs and index, after its platform
// manifest) takes no token from the credential's limit (limit false).
func (s *Server) authorizeLimited(w *request, r *http.Request, access string, limit bool) error {
	if access == publish.AccessPublic {
		return nil
	}
	// A proxy's question and a registry request may be answered from the
	// short-lived cache of checked credentials (a pull is many requests
	// with one header); another download wharf serves itself never is.
	cached := s.creds != nil && (w.proxied != "" || registryPath(r.URL.Path))
	p, err := s.principal(r, cached)
	if err != nil {
		return err
	}
	if p == nil {
		return fmt.Errorf("%w: no credentials", ErrUnauthenticated)
	}
	w.who = p.Kind + ":" + p.Name
	w.principal = p
	if limit {
		if ok, wait := s.keyLimit.allow(w.who); !ok {
			w.Header().Set("Retry-After", fmt.Sprint(int(wait/time.Second)+1))
			return tooMany(wait)
		}
	}
	if !p.Allows(access) {
		return ErrForbidden
	}
	return nil
}

// TokenUser is the Basic user name whose password is an access token
// (docker login -u token), for clients that send Basic credentials only.
const TokenUser = "token"

// principal finds who the request is authenticated as: the Authorization
// header (Bearer access token, or Basic with an API key as the user name
// or password), else the browser session. It is nil for an anonymous
// request; a header that does not check out, or credentials that can be
// read more than one way (see ambiguous), are ErrUnauthenticated.
//
// With cached, an Authorization header's answer comes from and is kept in
// s.creds (a browser session has its own recheck).
func (s *Server) principal(r *http.Request, cached bool) (*Principal, error) {
	if err := ambiguous(r.Header); err != nil {
		return nil, err
	}
	h := r.Header.Get("Authorization")
	if cached && h != "" {
		if p, err, ok := s.creds.get(h); ok {
			if err != nil {
				return nil, err
			}
			return &p, nil
		}
		p, err := s.principal(r, false)
		if p != nil {
			s.creds.put(h, *p, nil)
		} else {
			s.creds.put(h, Principal{}, err)
		}
		return p, err
	}
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
		if user == TokenUser {
			// docker login -u token -p ACCESS_TOKEN: a registry
			// client sends what it has as Basic credentials.
			p, err = s.auth.Token(r.Context(), strings.TrimSpace(pass))
			break
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
