package publish

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"
)

// Manifest is releases.json: every version ever published, newest first.
// Publishers merge into it and never drop a version.
type Manifest struct {
	Schema   int       `json:"schema"`
	Releases []Release `json:"releases"`
}

// ManifestSchema is the schema number this package writes.
const ManifestSchema = 1

// Release is one published version.
type Release struct {
	Version   string     `json:"version"`
	Kind      string     `json:"kind"` // release or preview
	Published time.Time  `json:"published"`
	Artifacts []Artifact `json:"artifacts"`
	// Images are the release's images as the registry tree serves them
	// (v2/NAME/...), each an index of its platforms' manifests.
	Images []Image `json:"images,omitempty"`
	// Notes are the release notes as written (Markdown), NotesHTML the
	// same rendered by RenderNotes at publish, which the page shows.
	Notes     string `json:"notes,omitempty"`
	NotesHTML string `json:"notes_html,omitempty"`
	// Provenance is what the release's provenance attestations say of its
	// build, for the page; nil when none was written. The attestations
	// beside each artifact are what a verifier checks.
	Provenance *ReleaseProvenance `json:"provenance,omitempty"`
}

// ReleaseProvenance is a release's build as its provenance states it: a
// field not known is empty.
type ReleaseProvenance struct {
	BuilderID  string `json:"builder_id,omitempty"`
	Repository string `json:"source_repo,omitempty"`
	Commit     string `json:"source_commit,omitempty"`
	Ref        string `json:"source_ref,omitempty"`
	BuildID    string `json:"build_id,omitempty"`
}

// Artifact is one published file: an artifact for one build.
type Artifact struct {
	Name      string `json:"name"`     // treasury-cli
	Kind      string `json:"kind"`     // binary or image
	Build     string `json:"build"`    // x86, arm, mac
	OS        string `json:"os"`       // linux, macos
	Platform  string `json:"platform"` // amd64, arm64
	Key       string `json:"key"`      // canonical object key
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`    // hex
	Signature string `json:"signature"` // base64 DER ECDSA, the content of Key+".sig"
	Access    string `json:"access"`    // public, basic, full
	// Attestations are the signed statements about the file beside it:
	// its provenance and its SBOM.
	Attestations []Attestation `json:"attestations,omitempty"`
}

// FileName is the canonical file name, the last element of Key.
func (a Artifact) FileName() string {
	for i := len(a.Key) - 1; i >= 0; i-- {
		if a.Key[i] == '/' {
			return a.Key[i+1:]
		}
	}
	return a.Key
}

// ReadManifest decodes releases.json.
func ReadManifest(r io.Reader) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(r)
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("read %s: %w", KeyManifest, err)
	}
	if m.Schema > ManifestSchema {
		return nil, fmt.Errorf("read %s: schema %d is newer than this wharf understands (%d)", KeyManifest, m.Schema, ManifestSchema)
	}
	return &m, nil
}

// Encode writes m as indented JSON, releases newest first.
func (m *Manifest) Encode(w io.Writer) error {
	m.Schema = ManifestSchema
	m.sort()
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(m)
}

func (m *Manifest) sort() {
	slices.SortStableFunc(m.Releases, func(a, b Release) int {
		va, errA := ParseVersion(a.Version)
		vb, errB := ParseVersion(b.Version)
		if errA != nil || errB != nil {
			return 0
		}
		return vb.Compare(va)
	})
}

// Find returns the release of version v.
func (m *Manifest) Find(v string) (*Release, bool) {
	for i := range m.Releases {
		if m.Releases[i].Version == v {
			return &m.Releases[i], true
		}
	}
	return nil, false
}

// Merge adds r, or replaces the release of the same version. It returns
// whether r was new.
func (m *Manifest) Merge(r Release) bool {
	if old, ok := m.Find(r.Version); ok {
		*old = r
		return false
	}
	m.Releases = append(m.Releases, r)
	m.sort()
	return true
}

// Newest returns the newest version of a kind (release or preview), ok false
// when there is none.
func (m *Manifest) Newest(kind string) (Version, bool) {
	var best Version
	found := false
	for _, r := range m.Releases {
		v, err := ParseVersion(r.Version)
		if err != nil || v.Kind() != kind {
			continue
		}
		if !found || v.Compare(best) > 0 {
			best, found = v, true
		}
	}
	return best, found
}

// Resolve returns the release a tag (latest or preview) names, given the
// version its pointer holds ("" when the pointer is missing): the
// pointer's release when the manifest has it, else the newest of the
// tag's kind (a pointer missing, or ahead of the manifest). ok is false
// when the manifest has no release of the kind or tag is no tag.
func (m *Manifest) Resolve(tag, pointer string) (*Release, bool) {
	kind := KindRelease
	switch tag {
	case KeyLatest:
	case KeyPreview:
		kind = KindPreview
	default:
		return nil, false
	}
	if pointer != "" {
		if r, ok := m.Find(pointer); ok {
			return r, true
		}
	}
	v, ok := m.Newest(kind)
	if !ok {
		return nil, false
	}
	return m.Find(v.String())
}

// PreviousRelease returns the newest non-preview release below v.
func (m *Manifest) PreviousRelease(v Version) (Version, bool) {
	var best Version
	found := false
	for _, r := range m.Releases {
		w, err := ParseVersion(r.Version)
		if err != nil || w.IsPreview() || w.Compare(v) >= 0 {
			continue
		}
		if !found || w.Compare(best) > 0 {
			best, found = w, true
		}
	}
	return best, found
}

// Image finds the image of a name in release r.
func (r *Release) Image(name string) (Image, bool) {
	for _, im := range r.Images {
		if im.Name == name {
			return im, true
		}
	}
	return Image{}, false
}

// Artifact finds the artifact of a name and build in release r.
func (r *Release) Artifact(name, build string) (Artifact, bool) {
	if b, ok := LookupBuild(build); ok {
		build = b.Name
	}
	for _, a := range r.Artifacts {
		if a.Name == name && a.Build == build {
			return a, true
		}
	}
	return Artifact{}, false
}
