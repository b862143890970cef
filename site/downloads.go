package site

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wharfhq/wharf/publish"
)

// canonical serves /bin/... and /img/...: an artifact (with its access
// check), its signature, the release's SHA256SUMS (no auth), or an
// attestation of an artifact (with the artifact's access check).
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
	if at, ok := snap.attestations[key]; ok {
		return s.attestation(w, r, key, at)
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

// attestation serves an attestation file releases.json lists, to the
// credentials that may download its artifact, cached as the artifact is.
// It is no download of the artifact: not counted as one.
func (s *Server) attestation(w *request, r *http.Request, key string, at attestation) error {
	if err := s.authorize(w, r, at.of.Access); err != nil {
		return err
	}
	w.Header().Set("Cache-Control", publish.CacheControl(key, at.of.Access))
	return s.serveObject(w, r, key, publish.AttestationContentType(at.predicateType), "")
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
