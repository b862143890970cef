package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/wharfhq/wharf/internal/parallel"
	"github.com/wharfhq/wharf/publish/oci"
	"github.com/wharfhq/wharf/templates"
)

// ErrVersionExists is returned by Publish for a version that is already
// published (or half-published) with different bytes: versions are
// immutable.
var ErrVersionExists = errors.New("version already published with different content")

// ErrOtherKey is returned by Publish for a version that is already
// published with signatures of another key: the signatures are part of
// the release, and a new dl.pub would break the verification of every
// download of it.
var ErrOtherKey = errors.New("version already published, signed by another key")

// Publisher lays a signed release into a Store, in the order of
// docs/design.md ("Publish semantics"): artifacts and their signatures,
// SHA256SUMS, the manifest, the redirect rules, the page, dl.pub, the
// latest/preview pointers, the channel record and the install script. A crash at any point leaves the
// previous release fully served; running the same publish again finishes
// it. Build one with NewPublisher; the exported fields may be changed
// before Publish.
type Publisher struct {
	Store    Store
	Signer   Signer
	Config   *Config
	BaseURL  string           // the download server's URL, no trailing slash
	Now      func() time.Time // the clock, for the manifest's publish times
	Progress Progress         // NoProgress when nil
	Parallel int              // concurrent artifact uploads, at least 1
	DryRun   bool             // plan only: report the keys and write nothing
	// ChannelExpiry is how long the channel record a publish writes is
	// valid (install scripts refuse it afterwards, so a mirror cannot
	// freeze a machine on an old release), at most MaxChannelExpiry; 0
	// for DefaultChannelExpiry.
	ChannelExpiry time.Duration
	// KeepChannelExpiry makes a zero ChannelExpiry keep the validity
	// period of the record there (DefaultChannelExpiry for a new tree).
	KeepChannelExpiry bool
	// Notes are the release notes in Markdown ("" for none), rendered by
	// RenderNotes and kept in releases.json with the release. Publishing a
	// published version again with other notes replaces its notes.
	Notes string
	// TempAge is how old the leftovers of a killed publish (temporary
	// files, incomplete multipart uploads) must be before a publish removes
	// them (stores that implement TempCleaner); younger ones may belong to
	// a publish still running. NewPublisher sets DefaultTempAge.
	TempAge time.Duration
	// Provenance is what the build job knows of itself; each artifact of
	// a new version gets a signed SLSA provenance statement of it, unless
	// it is zero (nothing known: no statement is made up).
	Provenance Provenance

	install   *template.Template
	redirects *template.Template
	page      *PageRenderer
}

// DefaultTempAge is the default Publisher.TempAge: a day, longer than any
// upload takes.
const DefaultTempAge = 24 * time.Hour

// Result is what a Publish did.
type Result struct {
	Version string
	// Written lists the keys written, in order; with DryRun, the keys that
	// would be.
	Written []string
	// Existing is true when the version was already published with the
	// same bytes: nothing of the release was uploaded again.
	Existing bool
	Latest   string  // the latest pointer afterwards ("" for none)
	Preview  string  // the preview pointer afterwards ("" for none)
	Channel  Channel // the channel record afterwards
}

// NewPublisher returns a Publisher writing to store, signing with signer.
// It parses the templates it renders now, so a broken one fails here.
func NewPublisher(store Store, signer Signer, cfg *Config, baseURL string) (*Publisher, error) {
	if err := CheckBaseURL(baseURL); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	install, err := templates.Text(templates.Install)
	if err != nil {
		return nil, fmt.Errorf("install script template: %w", err)
	}
	redirects, err := templates.Text(templates.Redirects)
	if err != nil {
		return nil, fmt.Errorf("redirects template: %w", err)
	}
	page, err := NewPageRenderer()
	if err != nil {
		return nil, err
	}
	return &Publisher{
		Store:     store,
		Signer:    signer,
		Config:    cfg,
		BaseURL:   strings.TrimRight(baseURL, "/"),
		Now:       time.Now,
		Progress:  NoProgress(),
		Parallel:  4,
		TempAge:   DefaultTempAge,
		install:   install,
		redirects: redirects,
		page:      page,
	}, nil
}

// publishRun is the state of one Publish call.
type publishRun struct {
	*Publisher
	v         Version
	notesHTML string // Notes rendered
	res       *Result
	sums      []string           // input index -> the SHA-256 of its file, hex
	sboms     map[string][]byte  // artifact key -> its SBOM (CycloneDX JSON), when known
	images    map[int]*oci.Image // input index -> the image its archive holds
	// states are the image archives' file states before their first read,
	// by path: what an archive copied unread must still be (FileSection).
	states map[string]inputState
	imgs   []Image // the release's images as written into the registry tree
	// blobsWritten is set once writeBlobs wrote every image's blobs.
	blobsWritten bool
	mu           sync.Mutex // guards res.Written
}

// Publish publishes version from inputs (see Config.ScanInput). It checks
// the version rules against the manifest, refuses different bytes for an
// existing version before writing anything, and treats identical bytes as
// done (finishing whatever an earlier run left undone).
func (p *Publisher) Publish(ctx context.Context, version string, inputs []Input) (*Result, error) {
	v, err := ParseVersion(version)
	if err != nil {
		return nil, err
	}
	if len(inputs) == 0 {
		return nil, fmt.Errorf("publish %s: no artifacts", v)
	}
	if err := p.Provenance.Validate(); err != nil {
		return nil, fmt.Errorf("publish %s: %w", v, err)
	}
	if p.Progress == nil {
		pp := *p
		pp.Progress = NoProgress()
		p = &pp
	}
	r := &publishRun{Publisher: p, v: v, res: &Result{Version: v.String()}}
	if p.Notes != "" {
		if r.notesHTML, err = RenderNotes([]byte(p.Notes)); err != nil {
			return nil, fmt.Errorf("publish %s: %w", v, err)
		}
	}
	if r.images, err = r.readImages(ctx, inputs); err != nil {
		return nil, fmt.Errorf("publish %s: %w", v, err)
	}
	if err := r.readInputs(ctx, inputs); err != nil {
		return nil, fmt.Errorf("publish %s: %w", v, err)
	}
	if len(r.images) > 0 {
		if err := checkRegistryBaseURL(p.BaseURL); err != nil {
			return nil, fmt.Errorf("publish %s: %w", v, err)
		}
	}
	r.cleanTemp(ctx, inputs)
	if err := r.publish(ctx, inputs); err != nil {
		return r.res, fmt.Errorf("publish %s: %w", v, err)
	}
	return r.res, nil
}

// publish is the pipeline, step by step in the order a crash must leave
// safe (docs/design.md, "Publish semantics"); each step has its own file:
//
//   - merge.go: read the manifest, check the version rules (checkVersion)
//   - signatures.go: the signer's public key
//   - existing.go: a published version is compared before anything is
//     written (compareExisting, checkSigner), and its .sig objects repaired
//     (signatures.go, ensureSigs)
//   - claim.go: a new version is claimed for these inputs
//   - upload.go: the artifacts, each checked and signed (signatures.go)
//   - registry_write.go: the images' registry tree (blobs, manifests, the
//     index, their cosign signatures, the version tag)
//   - sums.go: SHA256SUMS and its signature, per kind
//   - merge.go: the release into releases.json (mergeManifest)
//   - derived.go: _redirects and index.html from the manifest
//   - small.go: dl.pub
//   - pointer.go: latest or preview, then the images' tag of it
//     (registry_write.go); channel_write.go: the channel record
//   - install.go: the install script, with the record's sequence
//
// cleantemp.go removes what killed publishes left, before all this.
func (r *publishRun) publish(ctx context.Context, inputs []Input) error {
	m, _, err := r.readManifest(ctx)
	if err != nil {
		return err
	}
	if _, ok := m.Find(r.v.String()); !ok {
		// A published version passed the rules when it was published.
		if err := r.checkVersion(m); err != nil {
			return err
		}
	}
	pubPEM, err := r.publicKeyPEM(ctx)
	if err != nil {
		return err
	}

	var arts []Artifact
	if old, ok := m.Find(r.v.String()); ok {
		// Immutable: compare before writing anything.
		if err := r.compareExisting(ctx, old, inputs); err != nil {
			return err
		}
		if err := r.checkSigner(ctx, old); err != nil {
			return err
		}
		r.res.Existing = true
		r.Progress.Logf("%s is already published with these bytes; checking the rest of the tree", r.v)
		arts = old.Artifacts
		if err := r.ensureSigs(ctx, arts); err != nil {
			return err
		}
		// A version published before its attestations gets those it
		// lacks, its artifacts unchanged.
		var added int
		if arts, added, err = r.attestMissing(ctx, arts); err != nil {
			return err
		}
		if added > 0 {
			r.Progress.Logf("%s: %d attestations added to its artifacts", r.v, added)
		}
	} else if r.DryRun {
		r.wrote(ClaimKey(r.v))
		for _, in := range inputs {
			k := Key(in.Spec.Kind, in.Spec.Name, r.v, in.Build)
			r.wrote(k)
			r.wrote(SigKey(k))
			if !r.Provenance.IsZero() {
				r.wrote(ProvenanceKey(k))
			}
			if r.sboms[k] != nil {
				r.wrote(SBOMAttestationKey(k))
			}
		}
	} else {
		if err := r.claim(ctx, inputs); err != nil {
			return err
		}
		// The archives and the images' blobs, at the same time.
		err := r.parallel(ctx, 2, func(ctx context.Context, i int) error {
			if i == 1 {
				return r.writeBlobs(ctx, inputs)
			}
			var err error
			arts, err = r.uploadArtifacts(ctx, inputs)
			return err
		})
		if err != nil {
			return err
		}
	}

	if r.imgs, err = r.writeRegistry(ctx, inputs); err != nil {
		return err
	}
	if err := r.writeSums(ctx, arts, inputs); err != nil {
		return err
	}
	if err := r.mergeManifest(ctx, arts); err != nil {
		return err
	}
	if err := r.writeDerived(ctx); err != nil {
		return err
	}
	if err := r.putIfChanged(ctx, KeyPublicKey, pubPEM, "application/x-pem-file", true); err != nil {
		return err
	}
	pointer := KeyLatest
	if r.v.IsPreview() {
		pointer = KeyPreview
	}
	if err := r.movePointer(ctx, pointer); err != nil {
		return err
	}
	if err := r.writeImageTags(ctx, pointer); err != nil {
		return err
	}
	if err := r.writeChannel(ctx); err != nil {
		return err
	}
	// The install script carries the sequence of the record written just
	// before it, and refuses any older record: it is written after the
	// record, so a crash between the two leaves the previous script,
	// whose minimum is lower still.
	if err := r.writeInstall(ctx, pubPEM); err != nil {
		return err
	}
	r.res.Latest, _ = r.readPointer(ctx, KeyLatest)
	r.res.Preview, _ = r.readPointer(ctx, KeyPreview)
	return nil
}

// wrote records a key written, once however often it was.
func (r *publishRun) wrote(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.res.Written, key) {
		r.res.Written = append(r.res.Written, key)
	}
}

// parallel runs f for 0..n-1 on at most r.Parallel goroutines
// (parallel.Do).
func (r *publishRun) parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	return parallel.Do(ctx, n, r.Parallel, f)
}
