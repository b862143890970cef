package site

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wharfhq/wharf/publish"
)

// releaseTree caches what the short URLs and the access checks need from the
// published tree: the manifest and the two pointers. It re-reads an object
// only when its ETag changed, and checks the ETags (a Stat each) at most
// once per interval, so a new release is served without a restart and a
// request costs no parse.
type releaseTree struct {
	store    publish.Store
	now      func() time.Time
	interval time.Duration
	log      *slog.Logger

	mu  sync.Mutex // held by the one refresh in progress
	cur atomic.Pointer[snapshot]
	// failure is the error of the last refresh, nil when it succeeded:
	// /healthz reports it while an older snapshot is served.
	failure atomic.Pointer[treeFailure]
}

// treeFailure is a refresh that failed, and when.
type treeFailure struct {
	err error
	at  time.Time
}

// lastFailure returns the error of the last refresh and when it
// happened; nil when the last refresh succeeded.
func (t *releaseTree) lastFailure() *treeFailure { return t.failure.Load() }

// snapshot is one consistent view of the tree.
type snapshot struct {
	checked  time.Time
	etags    map[string]string // of latest, preview and releases.json; "" when missing
	pointers map[string]string // latest, preview -> version ("" when missing)
	manifest *publish.Manifest
	byKey    map[string]publish.Artifact
	// attestations are the attestation files releases.json lists, by key.
	attestations map[string]attestation
	// url is the URL the tree was published for (its channel record's
	// url line), "" when it has none.
	url string
}

// attestation is an attestation file releases.json lists: it is read
// with the access class of the artifact it is about.
type attestation struct {
	of            publish.Artifact
	predicateType string
}

// watched are the objects a snapshot is made of, read in this order: the
// publisher writes the manifest before it moves a pointer, so reading the
// pointers first never sees a pointer to a release the manifest lacks.
var watched = []string{publish.KeyLatest, publish.KeyPreview, publish.KeyManifest, publish.KeyChannel}

// get returns a snapshot no older than the interval. When the store
// cannot be reached and an older snapshot exists, it keeps serving that
// one (redirects keep working; downloads fail on their own).
func (t *releaseTree) get(ctx context.Context) (*snapshot, error) {
	s := t.cur.Load()
	if s != nil && t.interval > 0 && t.now().Sub(s.checked) < t.interval {
		return s, nil
	}
	if s != nil && t.interval > 0 {
		// Someone else refreshing: the current view is good enough.
		if !t.mu.TryLock() {
			return s, nil
		}
	} else {
		t.mu.Lock()
	}
	defer t.mu.Unlock()
	if s2 := t.cur.Load(); s2 != s && s2 != nil && t.interval > 0 {
		return s2, nil
	}
	next, err := t.refresh(ctx, s)
	if err != nil && !errors.Is(err, context.Canceled) {
		t.failure.Store(&treeFailure{err: err, at: t.now()})
	}
	if err != nil {
		if s != nil && !errors.Is(err, context.Canceled) {
			t.log.Warn("release tree unreadable; serving the last one read", slog.Any("err", err))
			return s, nil
		}
		return nil, err
	}
	t.failure.Store(nil)
	t.cur.Store(next)
	return next, nil
}

// refresh builds the next snapshot from old, re-reading what changed.
func (t *releaseTree) refresh(ctx context.Context, old *snapshot) (*snapshot, error) {
	// A directory store notices here that its directory was deleted or
	// created again.
	if c, ok := t.store.(publish.Checker); ok {
		if err := c.Check(ctx); err != nil {
			return nil, err
		}
	}
	etags := make(map[string]string, len(watched))
	changed := false
	for _, key := range watched {
		info, err := t.store.Stat(ctx, key)
		switch {
		case errors.Is(err, publish.ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("stat %s: %w", key, err)
		default:
			etags[key] = objectVersion(info)
		}
		if old == nil || old.etags[key] != etags[key] {
			changed = true
		}
	}
	if !changed {
		next := *old
		next.checked = t.now()
		return &next, nil
	}
	next := &snapshot{
		etags:    map[string]string{},
		pointers: map[string]string{},
		manifest: &publish.Manifest{},
	}
	for _, key := range watched {
		if old != nil && old.etags[key] == etags[key] && etags[key] != "" {
			next.etags[key] = etags[key]
			switch key {
			case publish.KeyManifest:
				next.manifest = old.manifest
			case publish.KeyChannel:
				next.url = old.url
			default:
				next.pointers[key] = old.pointers[key]
			}
			continue
		}
		b, etag, err := t.read(ctx, key)
		if errors.Is(err, publish.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		next.etags[key] = etag
		switch key {
		case publish.KeyManifest:
			m, err := publish.ReadManifest(strings.NewReader(string(b)))
			if err != nil {
				return nil, err
			}
			next.manifest = m
		case publish.KeyChannel:
			// Only the page's commands read it; a record that does not
			// parse leaves them without a URL, the downloads unaffected.
			if c, _, _, err := publish.ParseChannel(b); err == nil && publish.CheckBaseURL(c.URL) == nil {
				next.url = c.URL
			}
		default:
			next.pointers[key] = strings.TrimSpace(string(b))
		}
	}
	next.byKey = map[string]publish.Artifact{}
	next.attestations = map[string]attestation{}
	for _, r := range next.manifest.Releases {
		for _, a := range r.Artifacts {
			next.byKey[a.Key] = a
			for _, at := range a.Attestations {
				next.attestations[at.Key] = attestation{of: a, predicateType: at.PredicateType}
			}
		}
	}
	next.checked = t.now()
	return next, nil
}

// maxSmallObject bounds what is read into memory: pointers and the manifest.
const maxSmallObject = 64 << 20

func (t *releaseTree) read(ctx context.Context, key string) ([]byte, string, error) {
	obj, err := t.store.Open(ctx, key)
	if err != nil {
		return nil, "", fmt.Errorf("open %s: %w", key, err)
	}
	defer obj.Close()
	b, err := io.ReadAll(io.LimitReader(obj, maxSmallObject+1))
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", key, err)
	}
	if len(b) > maxSmallObject {
		return nil, "", fmt.Errorf("read %s: larger than %d bytes", key, maxSmallObject)
	}
	return b, objectVersion(obj.Info()), nil
}

// objectVersion is what changes when an object changes: its ETag, or its
// modification time and size for a store that keeps no ETag.
func objectVersion(info publish.ObjectInfo) string {
	if info.ETag != "" {
		return info.ETag
	}
	return fmt.Sprintf("%d-%d", info.ModTime.UnixNano(), info.Size)
}

// release resolves a tag (latest, preview) or a version to a release.
func (s *snapshot) release(tag string) (*publish.Release, error) {
	switch tag {
	case publish.KeyLatest, publish.KeyPreview:
		if r, ok := s.manifest.Resolve(tag, s.pointers[tag]); ok {
			return r, nil
		}
		kind := publish.KindRelease
		if tag == publish.KeyPreview {
			kind = publish.KindPreview
		}
		return nil, notFound(fmt.Sprintf("no %s has been published", kind))
	}
	v, err := publish.ParseVersion(tag)
	if err != nil {
		return nil, notFound(fmt.Sprintf("no version %q: use latest, preview or a version such as 26.1.2", tag))
	}
	r, ok := s.manifest.Find(v.String())
	if !ok {
		return nil, notFound(fmt.Sprintf("version %s has not been published", v))
	}
	return r, nil
}
