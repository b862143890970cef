package site

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/wharfhq/wharf/publish"
)

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
