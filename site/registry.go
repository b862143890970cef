package site

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/oci"
)

// The registry's read API (the OCI distribution specification's pull
// side) over the registry tree publish writes (publish.RegistryDir):
//
//	GET|HEAD /v2/                           200 with credentials, else 401 and a Basic challenge
//	GET|HEAD /v2/IMAGE/manifests/TAG|DIGEST a manifest or an index, its media type and Docker-Content-Digest
//	GET|HEAD /v2/IMAGE/blobs/DIGEST         a blob (Range; a presigned redirect with --presign)
//
// An image's repository needs the access class its releases give it
// (full by default), from an API key as the Basic user name (docker login
// -u KEY, any password) or an access token as the password of the user
// "token".

// registryTarget is a parsed /v2/ path.
type registryTarget struct {
	image string // "" for /v2/ itself
	what  string // "manifests" or "blobs"
	ref   string // tag or digest
}

// key is the object key of the target.
func (t registryTarget) key() string {
	if t.what == "blobs" {
		return publish.RegistryBlobKey(t.image, t.ref)
	}
	return publish.RegistryManifestKey(t.image, t.ref)
}

// parseRegistryPath parses the unescaped path below /v2; ok is false for a
// path the registry does not serve.
func parseRegistryPath(p string) (registryTarget, bool) {
	if p == "/v2" || p == "/v2/" {
		return registryTarget{}, true
	}
	els := strings.Split(strings.TrimPrefix(p, "/v2/"), "/")
	if len(els) != 3 || !imageName(els[0]) {
		return registryTarget{}, false
	}
	t := registryTarget{image: els[0], what: els[1], ref: els[2]}
	switch t.what {
	case "blobs":
		return t, oci.ValidDigest(t.ref)
	case "manifests":
		return t, oci.ValidDigest(t.ref) || validTag(t.ref)
	}
	return registryTarget{}, false
}

// imageName reports whether s may name an image of the tree.
func imageName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// validTag is the distribution specification's tag grammar.
func validTag(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '.' || s[0] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}

// registryPath reports whether p (unescaped) is below /v2.
func registryPath(p string) bool { return p == "/v2" || strings.HasPrefix(p, "/v2/") }

// maxManifest bounds a manifest wharf serves from memory.
const maxManifest = 4 << 20

// registry answers a /v2/ request.
func (s *Server) registry(w *request, r *http.Request, t target) error {
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	rt := t.registry
	if rt.image == "" {
		// docker login's question: are these credentials good?
		p, err := s.principal(r, false)
		if err != nil {
			return err
		}
		if p == nil {
			return fmt.Errorf("%w: no credentials", ErrUnauthenticated)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Length", "2")
		if r.Method != http.MethodHead {
			io.WriteString(w, "{}")
		}
		return nil
	}
	snap, err := s.tree.get(r.Context())
	if err != nil {
		return storeError(err)
	}
	access, ok := snap.manifest.ImageAccess(rt.image)
	if !ok {
		return &registryError{http.StatusNotFound, "NAME_UNKNOWN", "no image " + rt.image + " is published"}
	}
	key := rt.key()
	// Every answer about a platform's manifest is a pull: counted when it
	// is served, audited either way.
	pull := publish.Artifact{Name: rt.image, Kind: publish.KindImage, Key: key, Access: access}
	if build, ok := platformBuild(snap.manifest, rt); ok {
		pull.Build = build
		w.download = &pull
	}
	if err := s.authorizeLimited(w, r, access, w.download != nil); err != nil {
		if w.download == nil {
			w.download = &pull // a refusal is audited whatever was asked
		}
		return err
	}
	if rt.what == "blobs" {
		return s.registryBlob(w, r, key, rt.ref, access)
	}
	return s.registryManifest(w, r, key, rt, access)
}

// platformBuild is the build whose platform manifest rt names by digest.
func platformBuild(m *publish.Manifest, rt registryTarget) (string, bool) {
	if rt.what != "manifests" || !oci.ValidDigest(rt.ref) {
		return "", false
	}
	for _, rel := range m.Releases {
		for _, im := range rel.Images {
			if im.Name != rt.image {
				continue
			}
			for _, p := range im.Platforms {
				if p.Manifest == rt.ref {
					return p.Build, true
				}
			}
		}
	}
	return "", false
}

// registryManifest serves a manifest or an index by tag or digest.
func (s *Server) registryManifest(w *request, r *http.Request, key string, rt registryTarget, access string) error {
	obj, err := s.store.Open(r.Context(), key)
	if errors.Is(err, publish.ErrNotFound) {
		return &registryError{http.StatusNotFound, "MANIFEST_UNKNOWN", "no manifest " + rt.ref + " of " + rt.image}
	}
	if err != nil {
		return storeError(err)
	}
	defer obj.Close()
	body, err := io.ReadAll(io.LimitReader(obj, maxManifest+1))
	if err != nil {
		return storeError(err)
	}
	digest := oci.Digest(body)
	if len(body) > maxManifest || oci.ValidDigest(rt.ref) && digest != rt.ref {
		return &httpError{http.StatusInternalServerError, codeInternal, "internal error", fmt.Errorf("%s: %d bytes of digest %s", key, len(body), digest)}
	}
	mt := oci.MediaTypeOf(body)
	if mt == "" {
		mt = oci.MediaTypeManifest
		if bytes.Contains(body, []byte(`"manifests"`)) {
			mt = oci.MediaTypeIndex
		}
	}
	h := w.Header()
	h.Set("Content-Type", mt)
	h.Set("Docker-Content-Digest", digest)
	h.Set("ETag", `"`+digest+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", publish.CacheControl(key, access))
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	return nil
}

// HeaderAccel, on a request for a blob, asks wharf to let the proxy in
// front serve the bytes from the tree itself: the nginx recipe sets it
// (and removes a client's own everywhere else), and wharf, once the
// request's credentials are allowed, answers with the blob's headers and
// X-Accel-Redirect to AccelPrefix and the blob's key, which nginx serves
// from the directory with sendfile, Range and HEAD as it serves the tars.
// A client sending it to wharf alone gets that empty answer, for a blob it
// may read anyway.
const HeaderAccel = "X-Wharf-Accel"

// AccelPrefix is where the nginx recipe serves the registry tree's blobs
// to its own X-Accel-Redirect (an internal location: 404 to clients).
const AccelPrefix = "/_wharf/tree/"

// registryBlob serves a blob, or redirects to a presigned URL of it, or
// hands it to the proxy in front (HeaderAccel).
func (s *Server) registryBlob(w *request, r *http.Request, key, digest, access string) error {
	if r.Header.Get(HeaderAccel) != "" && s.presigner == nil {
		if _, err := s.store.Stat(r.Context(), key); errors.Is(err, publish.ErrNotFound) {
			return &registryError{http.StatusNotFound, "BLOB_UNKNOWN", "no blob " + digest}
		} else if err != nil {
			return storeError(err)
		}
		h := w.Header()
		h.Set("Docker-Content-Digest", digest)
		h.Set("Cache-Control", publish.CacheControl(key, access))
		h.Set("Content-Type", "application/octet-stream")
		h.Set("X-Accel-Redirect", AccelPrefix+key)
		h.Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
		return nil
	}
	if s.presigner != nil {
		if _, err := s.store.Stat(r.Context(), key); errors.Is(err, publish.ErrNotFound) {
			return &registryError{http.StatusNotFound, "BLOB_UNKNOWN", "no blob " + digest}
		}
		u, err := s.presigner.PresignGet(r.Context(), key, "", s.expiry)
		if err != nil {
			return storeError(err)
		}
		w.Header().Set("Docker-Content-Digest", digest)
		found(w, u, "no-store")
		return nil
	}
	w.Header().Set("Docker-Content-Digest", digest)
	w.Header().Set("Cache-Control", publish.CacheControl(key, access))
	err := s.serveObject(w, r, key, "application/octet-stream", "")
	if errors.Is(err, publish.ErrNotFound) {
		return &registryError{http.StatusNotFound, "BLOB_UNKNOWN", "no blob " + digest}
	}
	return err
}

// registryError is an error answered with a registry error code.
type registryError struct {
	status  int
	code    string
	message string
}

func (e *registryError) Error() string { return e.message }

// writeRegistryError answers err in the registry's error format:
// {"errors":[{"code":"UNAUTHORIZED","message":"..."}]}, the status as
// writeError gives it, a 401 with a Basic challenge, which docker login
// and a kubelet's pull secret answer.
func (s *Server) writeRegistryError(w http.ResponseWriter, r *http.Request, err error) {
	var re *registryError
	if !errors.As(err, &re) {
		// The status and message writeError would answer, in a recorder.
		rec := &errRecorder{header: http.Header{}}
		s.writeError(rec, r, err)
		if rec.status == 0 {
			return // the client went away
		}
		var e Error
		_ = json.Unmarshal(rec.body.Bytes(), &e)
		re = &registryError{rec.status, registryCode(rec.status), e.Message}
		if ra := rec.header.Get("Retry-After"); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		if a := rec.header.Get("Allow"); a != "" {
			w.Header().Set("Allow", a)
		}
	}
	h := w.Header()
	for _, k := range []string{"Content-Disposition", "ETag", "Last-Modified", "Accept-Ranges", "Content-Encoding", "Docker-Content-Digest"} {
		h.Del(k)
	}
	h.Set("Docker-Distribution-API-Version", "registry/2.0")
	if re.status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Basic realm="wharf"`)
	}
	body, _ := json.Marshal(map[string]any{"errors": []map[string]string{{"code": re.code, "message": re.message}}})
	body = append(body, '\n')
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(re.status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// registryCode is the registry error code of a status.
func registryCode(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "UNAUTHORIZED"
	case http.StatusForbidden:
		return "DENIED"
	case http.StatusNotFound:
		return "NAME_UNKNOWN"
	case http.StatusTooManyRequests:
		return "TOOMANYREQUESTS"
	case http.StatusMethodNotAllowed:
		return "UNSUPPORTED"
	case http.StatusBadRequest:
		return "NAME_INVALID"
	}
	return "UNAVAILABLE"
}

// errRecorder keeps what writeError answers.
type errRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (e *errRecorder) Header() http.Header         { return e.header }
func (e *errRecorder) Write(b []byte) (int, error) { return e.body.Write(b) }
func (e *errRecorder) WriteHeader(status int)      { e.status = status }
