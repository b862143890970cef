package site

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/wharfhq/wharf/publish"
)

// health answers 200 when the store is there and holds a published tree
// that the downloads are served from as it is now, and the auth database
// answers; else 503 saying which is not. A
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
	// The manifest as the downloads see it: a releases.json that does not
	// parse (a truncated copy, a hand edit) makes every short URL and
	// download answer 503 when no earlier one was read, and freezes them
	// on the earlier one otherwise; either way the tree is not healthy.
	snap, err := s.tree.get(ctx)
	if err != nil {
		return &httpError{http.StatusServiceUnavailable, codeUnavailable, "the release tree cannot be read, so short URLs and downloads answer 503: " + err.Error(), err}
	}
	if f := s.tree.lastFailure(); f != nil {
		return &httpError{http.StatusServiceUnavailable, codeUnavailable, fmt.Sprintf(
			"the release tree cannot be read since %s: %v; short URLs and downloads are served from the %s read at %s (%d releases, latest %s)",
			f.at.UTC().Format(time.RFC3339), f.err, publish.KeyManifest, snap.checked.UTC().Format(time.RFC3339), len(snap.manifest.Releases), orDash(snap.pointers[publish.KeyLatest])), f.err}
	}
	if p, ok := s.auth.(interface{ Ping(context.Context) error }); ok {
		if err := p.Ping(ctx); err != nil {
			return &httpError{http.StatusServiceUnavailable, codeUnavailable, "the auth database is unavailable", err}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(healthAnswer{
		Status: "ok",
		Manifest: healthManifest{
			Releases: len(snap.manifest.Releases),
			Latest:   snap.pointers[publish.KeyLatest],
			Preview:  snap.pointers[publish.KeyPreview],
			Checked:  snap.checked.UTC().Format(time.RFC3339),
		},
	})
}

// healthAnswer is the body of a healthy /healthz: the manifest the
// downloads are served from.
type healthAnswer struct {
	Status   string         `json:"status"`
	Manifest healthManifest `json:"manifest"`
}

type healthManifest struct {
	Releases int    `json:"releases"`
	Latest   string `json:"latest,omitempty"`
	Preview  string `json:"preview,omitempty"`
	Checked  string `json:"checked"` // when the store was last read
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
