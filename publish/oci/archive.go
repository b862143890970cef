package oci

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// Limits bound what Read accepts.
type Limits struct {
	// MaxSize is the largest archive accepted, in bytes; 0 for
	// DefaultMaxSize.
	MaxSize int64
}

// DefaultMaxSize is the default Limits.MaxSize: 16 GiB.
const DefaultMaxSize = 16 << 30

// Bounds on the parts of an archive.
const (
	maxJSON    = 4 << 20 // manifest.json, index.json, a manifest, a config
	maxLayers  = 256
	maxEntries = 100_000
)

// ErrBadArchive is returned by Read for an archive that is no image
// archive wharf can publish; the message says why.
var ErrBadArchive = errors.New("bad image archive")

// Image is an image read from an archive: one platform's manifest, its
// config and its layers, each at its place in the archive.
type Image struct {
	// Manifest is the image manifest as the registry serves it: the
	// archive's own bytes when it holds one (an OCI layout), else one
	// written for its docker save manifest.json.
	Manifest          []byte
	ManifestMediaType string
	ManifestDigest    string
	Platform          Platform
	Config            Blob
	Layers            []Blob
	// SHA256 is the hex SHA-256 of the whole archive, taken in the same
	// read as the files' digests.
	SHA256 string
}

// Blob is a blob of an image: its descriptor and where its bytes are in
// the archive.
type Blob struct {
	Descriptor
	Offset int64
}

// Blobs is the config, then the layers.
func (im *Image) Blobs() []Blob { return append([]Blob{im.Config}, im.Layers...) }

// Descriptor is the manifest's descriptor, with the platform.
func (im *Image) Descriptor() Descriptor {
	p := im.Platform
	return Descriptor{MediaType: im.ManifestMediaType, Digest: im.ManifestDigest, Size: int64(len(im.Manifest)), Platform: &p}
}

// entry is a file of the archive.
type entry struct {
	off, size int64
	digest    string // sha256:hex of the content (regular files)
	link      string // the target, for a symbolic or hard link
}

// Read reads the image archive of size bytes in r, for the platform
// linux/arch. It reads every byte once, hashing each file and the whole
// archive (Image.SHA256, on a goroutine of its own), and refuses
// what a registry cannot serve as it is: a truncated or corrupt tar, a
// blob whose bytes are not its digest, an image of another platform, an
// index platform its config lacks, foreign or non-distributable layers,
// an archive over the size bound. Errors: ErrBadArchive (wrapped with the
// reason as its message), or the read error.
func Read(r io.ReaderAt, size int64, arch string, lim Limits) (*Image, error) {
	maxSize := lim.MaxSize
	if maxSize <= 0 {
		maxSize = DefaultMaxSize
	}
	if size > maxSize {
		return nil, bad("%d bytes, over the bound of %d (%s)", size, maxSize, humanBytes(maxSize))
	}
	a := &archive{r: r, files: map[string]entry{}}
	sum, err := a.scan(size)
	if err != nil {
		return nil, err
	}
	im, err := a.read(Platform{OS: "linux", Architecture: arch})
	if err != nil {
		return nil, err
	}
	im.SHA256 = sum
	return im, nil
}

func (a *archive) read(want Platform) (*Image, error) {
	if _, ok := a.files["index.json"]; ok {
		if _, ok := a.files["oci-layout"]; ok {
			return a.readLayout(want)
		}
	}
	if _, ok := a.files["manifest.json"]; ok {
		return a.readDockerSave(want)
	}
	return nil, bad("neither a docker save archive (no manifest.json) nor an OCI image layout (no index.json and oci-layout)")
}

// badArchive is an ErrBadArchive whose message is the reason alone.
type badArchive struct{ reason string }

func (e *badArchive) Error() string        { return e.reason }
func (e *badArchive) Is(target error) bool { return target == ErrBadArchive }

func bad(format string, args ...any) error {
	return &badArchive{reason: fmt.Sprintf(format, args...)}
}

type archive struct {
	r     io.ReaderAt
	files map[string]entry
}

// countingReader counts the bytes read through it, so the offset of a
// tar entry's content is known when Next returns.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// scan reads the tar through once, hashing every regular file, and
// returns the hex SHA-256 of the whole archive, hashed on another
// goroutine from the same read.
func (a *archive) scan(size int64) (string, error) {
	whole := newAsyncHash()
	defer whole.Close()
	sr := io.NewSectionReader(a.r, 0, size)
	cr := &countingReader{r: io.TeeReader(sr, whole)}
	if err := a.scanTar(cr); err != nil {
		return "", err
	}
	// What follows the end-of-archive blocks is not read by tar, but it
	// is part of the file that is published.
	if _, err := io.Copy(whole, sr); err != nil {
		return "", fmt.Errorf("read the archive: %w", err)
	}
	return hex.EncodeToString(whole.Sum()), nil
}

func (a *archive) scanTar(cr *countingReader) error {
	tr := tar.NewReader(cr)
	buf := make([]byte, 256<<10)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return bad("not a tar archive, or cut off: %v", err)
		}
		if len(a.files) >= maxEntries {
			return bad("more than %d files", maxEntries)
		}
		name, ok := cleanName(h.Name)
		if !ok {
			return bad("file name %q leaves the archive", h.Name)
		}
		if name == "" {
			continue
		}
		var e entry
		switch h.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg:
			e.off, e.size = cr.n, h.Size
			hh := sha256.New()
			n, err := io.CopyBuffer(hh, tr, buf)
			if err != nil {
				return bad("%s: cut off after %d of %d bytes: %v", name, n, h.Size, err)
			}
			e.digest = "sha256:" + hex.EncodeToString(hh.Sum(nil))
		case tar.TypeSymlink:
			e.link = path.Join(path.Dir(name), h.Linkname)
		case tar.TypeLink:
			e.link = path.Clean(h.Linkname)
		default:
			return bad("%s: a tar entry of type %q, not a file, directory or link", name, h.Typeflag)
		}
		if _, dup := a.files[name]; dup {
			return bad("%s is in the archive twice", name)
		}
		a.files[name] = e
	}
	// A truncated archive fails above.
	return nil
}

// cleanName is a tar entry name relative to the archive root; ok is false
// for one that leaves it.
func cleanName(n string) (string, bool) {
	n = path.Clean("/" + n)
	if strings.Contains(n, "\x00") {
		return "", false
	}
	return strings.TrimPrefix(n, "/"), true
}

// file finds a regular file, following links inside the archive.
func (a *archive) file(name string) (entry, bool) {
	name, ok := cleanName(name)
	if !ok {
		return entry{}, false
	}
	for range 8 {
		e, ok := a.files[name]
		if !ok {
			return entry{}, false
		}
		if e.link == "" {
			return e, true
		}
		if name, ok = cleanName(e.link); !ok {
			return entry{}, false
		}
	}
	return entry{}, false
}

// readJSON reads a small file whole.
func (a *archive) readJSON(name string) ([]byte, entry, error) {
	e, ok := a.file(name)
	if !ok {
		return nil, e, bad("%s is not in the archive", name)
	}
	if e.size > maxJSON {
		return nil, e, bad("%s is %d bytes, over %d", name, e.size, maxJSON)
	}
	b := make([]byte, e.size)
	if _, err := a.r.ReadAt(b, e.off); err != nil {
		return nil, e, fmt.Errorf("read %s: %w", name, err)
	}
	return b, e, nil
}

// head reads the first bytes of a file.
func (a *archive) head(e entry, n int) []byte {
	b := make([]byte, min(int64(n), e.size))
	k, _ := a.r.ReadAt(b, e.off)
	return b[:k]
}

// blobName is where an OCI layout keeps the blob of digest d.
func blobName(d string) string { return "blobs/sha256/" + Hex(d) }

// layoutBlob finds the blob of a descriptor in an OCI layout and checks
// its size and digest.
func (a *archive) layoutBlob(d Descriptor, what string) (entry, error) {
	if !ValidDigest(d.Digest) {
		return entry{}, bad("%s: digest %q is not sha256:<64 hex digits>", what, d.Digest)
	}
	e, ok := a.file(blobName(d.Digest))
	if !ok {
		return e, bad("%s %s is not in the archive", what, d.Digest)
	}
	if e.digest != d.Digest {
		return e, bad("%s %s: its bytes have the digest %s (corrupt)", what, d.Digest, e.digest)
	}
	if e.size != d.Size {
		return e, bad("%s %s: %d bytes, its descriptor says %d", what, d.Digest, e.size, d.Size)
	}
	return e, nil
}

// readLayout reads an OCI image layout: index.json names the image
// manifest, or an index of platform manifests of which the one for want
// is taken.
func (a *archive) readLayout(want Platform) (*Image, error) {
	raw, _, err := a.readJSON("index.json")
	if err != nil {
		return nil, err
	}
	var idx Index
	if err := json.Unmarshal(raw, &idx); err != nil {
		return nil, bad("index.json: %v", err)
	}
	var cands []Descriptor
	for _, d := range idx.Manifests {
		switch {
		case IsIndexType(d.MediaType):
			if _, err := a.layoutBlob(d, "index"); err != nil {
				return nil, err
			}
			b, _, err := a.readJSON(blobName(d.Digest))
			if err != nil {
				return nil, err
			}
			var inner Index
			if err := json.Unmarshal(b, &inner); err != nil {
				return nil, bad("index %s: %v", d.Digest, err)
			}
			for _, m := range inner.Manifests {
				if IsManifestType(m.MediaType) && !isAttestation(m) {
					cands = append(cands, m)
				}
			}
		case IsManifestType(d.MediaType):
			if !isAttestation(d) {
				cands = append(cands, d)
			}
		default:
			return nil, bad("index.json lists a %q, neither an image manifest nor an index", d.MediaType)
		}
	}
	var pick *Descriptor
	var seen []string
	for i, d := range cands {
		if d.Platform == nil {
			if len(cands) == 1 {
				pick = &cands[i]
			}
			continue
		}
		seen = append(seen, d.Platform.String())
		if d.Platform.OS == want.OS && d.Platform.Architecture == want.Architecture {
			if pick != nil {
				return nil, bad("two manifests for %s", want)
			}
			pick = &cands[i]
		}
	}
	if pick == nil {
		if len(cands) == 0 {
			return nil, bad("index.json names no image manifest")
		}
		return nil, bad("an image for %s, published for %s", strings.Join(seen, ", "), want)
	}
	e, err := a.layoutBlob(*pick, "manifest")
	if err != nil {
		return nil, err
	}
	mb, _, err := a.readJSON(blobName(pick.Digest))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(mb, &m); err != nil {
		return nil, bad("manifest %s: %v", pick.Digest, err)
	}
	if m.MediaType != "" && m.MediaType != pick.MediaType {
		return nil, bad("manifest %s says it is a %s, its descriptor a %s", pick.Digest, m.MediaType, pick.MediaType)
	}
	im := &Image{Manifest: mb, ManifestMediaType: pick.MediaType, ManifestDigest: e.digest}
	ce, err := a.layoutBlob(m.Config, "config")
	if err != nil {
		return nil, err
	}
	im.Config = Blob{Descriptor: plain(m.Config), Offset: ce.off}
	if len(m.Layers) > maxLayers {
		return nil, bad("%d layers, over %d", len(m.Layers), maxLayers)
	}
	for i, l := range m.Layers {
		if err := distributable(l, i); err != nil {
			return nil, err
		}
		le, err := a.layoutBlob(l, fmt.Sprintf("layer %d", i+1))
		if err != nil {
			return nil, err
		}
		im.Layers = append(im.Layers, Blob{Descriptor: plain(l), Offset: le.off})
	}
	cfg, err := a.config(ce, want)
	if err != nil {
		return nil, err
	}
	if len(cfg.RootFS.DiffIDs) != len(m.Layers) {
		return nil, bad("the config lists %d layers, the manifest %d", len(cfg.RootFS.DiffIDs), len(m.Layers))
	}
	im.Platform = cfg.platform()
	if p := pick.Platform; p != nil && (p.OS != im.Platform.OS || p.Architecture != im.Platform.Architecture || p.Variant != "" && p.Variant != im.Platform.Variant) {
		return nil, bad("the index says %s, the image's config %s", p, im.Platform)
	}
	return im, nil
}

// isAttestation reports whether d is an attestation manifest buildx
// puts beside the platforms (platform unknown/unknown).
func isAttestation(d Descriptor) bool {
	return d.Annotations["vnd.docker.reference.type"] == "attestation-manifest" ||
		d.Platform != nil && d.Platform.OS == "unknown" && d.Platform.Architecture == "unknown"
}

// plain is a blob descriptor with what the manifest says of it.
func plain(d Descriptor) Descriptor {
	return Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size}
}

// distributable refuses a layer a registry tree cannot hold.
func distributable(l Descriptor, i int) error {
	if len(l.URLs) > 0 {
		return bad("layer %d is foreign (its bytes are at %s): only layers the archive holds are published", i+1, l.URLs[0])
	}
	if !distributableLayers[l.MediaType] {
		if strings.Contains(l.MediaType, "foreign") || strings.Contains(l.MediaType, "nondistributable") {
			return bad("layer %d is a %s, a foreign or non-distributable layer: only layers the archive holds are published", i+1, l.MediaType)
		}
		return bad("layer %d has media type %q, not an image layer", i+1, l.MediaType)
	}
	return nil
}

// imageConfig is what wharf reads of an image config.
type imageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Variant      string `json:"variant"`
	RootFS       struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

func (c imageConfig) platform() Platform {
	return Platform{OS: c.OS, Architecture: c.Architecture, Variant: c.Variant}
}

// config reads an image config and checks its platform.
func (a *archive) config(e entry, want Platform) (imageConfig, error) {
	var cfg imageConfig
	if e.size > maxJSON {
		return cfg, bad("the image config is %d bytes, over %d", e.size, maxJSON)
	}
	b := make([]byte, e.size)
	if _, err := a.r.ReadAt(b, e.off); err != nil {
		return cfg, fmt.Errorf("read the image config: %w", err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return cfg, bad("the image config: %v", err)
	}
	if cfg.OS != want.OS || cfg.Architecture != want.Architecture {
		return cfg, bad("an image for %s/%s, published for %s", cfg.OS, cfg.Architecture, want)
	}
	return cfg, nil
}

// readDockerSave reads the classic docker save layout: manifest.json
// names a config and layer tars, for which wharf writes an OCI manifest.
func (a *archive) readDockerSave(want Platform) (*Image, error) {
	raw, _, err := a.readJSON("manifest.json")
	if err != nil {
		return nil, err
	}
	var list []struct {
		Config       string
		Layers       []string
		LayerSources map[string]json.RawMessage
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, bad("manifest.json: %v", err)
	}
	if len(list) != 1 {
		return nil, bad("manifest.json lists %d images; save one image per platform", len(list))
	}
	sm := list[0]
	if len(sm.LayerSources) > 0 {
		return nil, bad("manifest.json names foreign layers (LayerSources): only layers the archive holds are published")
	}
	if len(sm.Layers) > maxLayers {
		return nil, bad("%d layers, over %d", len(sm.Layers), maxLayers)
	}
	for _, name := range sm.Layers {
		if _, ok := a.file(name); !ok {
			return nil, bad("layer %s named in manifest.json is not in the archive", name)
		}
	}
	ce, ok := a.file(sm.Config)
	if !ok {
		return nil, bad("image config %s named in manifest.json is not in the archive", sm.Config)
	}
	if base := strings.TrimSuffix(path.Base(sm.Config), ".json"); len(base) == 64 && "sha256:"+base != ce.digest {
		return nil, bad("image config %s: its bytes have the digest %s (corrupt)", sm.Config, ce.digest)
	}
	cfg, err := a.config(ce, want)
	if err != nil {
		return nil, err
	}
	if len(cfg.RootFS.DiffIDs) != len(sm.Layers) {
		return nil, bad("the config lists %d layers, manifest.json %d", len(cfg.RootFS.DiffIDs), len(sm.Layers))
	}
	m := Manifest{SchemaVersion: 2, MediaType: MediaTypeManifest,
		Config: Descriptor{MediaType: MediaTypeConfig, Digest: ce.digest, Size: ce.size}}
	im := &Image{Platform: cfg.platform(), ManifestMediaType: MediaTypeManifest}
	im.Config = Blob{Descriptor: m.Config, Offset: ce.off}
	for i, name := range sm.Layers {
		le, ok := a.file(name)
		if !ok {
			return nil, bad("layer %s named in manifest.json is not in the archive", name)
		}
		mt := layerType(a.head(le, 4))
		if mt == MediaTypeLayer && le.digest != cfg.RootFS.DiffIDs[i] {
			return nil, bad("layer %d (%s): its bytes have the digest %s, the config says %s (corrupt)", i+1, name, le.digest, cfg.RootFS.DiffIDs[i])
		}
		if strings.HasPrefix(name, "blobs/sha256/") && "sha256:"+path.Base(name) != le.digest {
			return nil, bad("layer %d (%s): its bytes have the digest %s (corrupt)", i+1, name, le.digest)
		}
		d := Descriptor{MediaType: mt, Digest: le.digest, Size: le.size}
		m.Layers = append(m.Layers, d)
		im.Layers = append(im.Layers, Blob{Descriptor: d, Offset: le.off})
	}
	if im.Manifest, err = json.Marshal(m); err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	im.ManifestDigest = Digest(im.Manifest)
	return im, nil
}

// layerType is the media type of a layer by its first bytes: docker save
// writes plain tars, an OCI layout may hold compressed ones.
func layerType(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return MediaTypeLayerGzip
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return MediaTypeLayerZstd
	}
	return MediaTypeLayer
}

func humanBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", f), "0"), ".") + " " + units[i]
}
