package publish

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/template"
	"time"

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

// Publisher lays a signed release into a Store, in the order of DESIGN.md
// ("Publish semantics"): artifacts and their signatures, SHA256SUMS, the
// manifest, the redirect rules, the page, dl.pub and the install script,
// and the latest/preview pointers last. A crash at any point leaves the
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
	// TempAge is how old the leftovers of a killed publish (temporary
	// files, incomplete multipart uploads) must be before a publish removes
	// them (stores that implement TempCleaner); younger ones may belong to
	// a publish still running. NewPublisher sets DefaultTempAge.
	TempAge time.Duration

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
	Latest   string // the latest pointer afterwards ("" for none)
	Preview  string // the preview pointer afterwards ("" for none)
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
	v   Version
	res *Result
	mu  sync.Mutex // guards res.Written
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
	if p.Progress == nil {
		pp := *p
		pp.Progress = NoProgress()
		p = &pp
	}
	r := &publishRun{Publisher: p, v: v, res: &Result{Version: v.String()}}
	r.cleanTemp(ctx, inputs)
	if err := r.publish(ctx, inputs); err != nil {
		return r.res, fmt.Errorf("publish %s: %w", v, err)
	}
	return r.res, nil
}

// cleanTemp removes what killed publishes left in the store (older than
// TempAge). A failure is only reported: it does not stop the publish.
func (r *publishRun) cleanTemp(ctx context.Context, inputs []Input) {
	c, ok := r.Store.(TempCleaner)
	if !ok || r.DryRun || r.TempAge <= 0 {
		return
	}
	keys := make([]string, len(inputs))
	for i, in := range inputs {
		keys[i] = Key(in.Spec.Kind, in.Spec.Name, r.v, in.Build)
	}
	n, size, err := c.CleanTemp(ctx, r.TempAge, keys)
	if err != nil {
		r.Progress.Logf("warning: cleaning up after killed publishes: %v", err)
	}
	if n > 0 {
		r.Progress.Logf("removed %d leftovers of killed publishes older than %v (%d bytes)", n, r.TempAge, size)
	}
}

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
	} else if r.DryRun {
		r.wrote(ClaimKey(r.v))
		for _, in := range inputs {
			k := Key(in.Spec.Kind, in.Spec.Name, r.v, in.Build)
			r.wrote(k)
			r.wrote(SigKey(k))
		}
	} else {
		if err := r.claim(ctx, inputs); err != nil {
			return err
		}
		if arts, err = r.uploadArtifacts(ctx, inputs); err != nil {
			return err
		}
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
	script, err := r.renderInstall(pubPEM)
	if err != nil {
		return err
	}
	if err := r.putIfChanged(ctx, KeyInstall, script, "text/x-shellscript; charset=utf-8", false); err != nil {
		return err
	}
	pointer := KeyLatest
	if r.v.IsPreview() {
		pointer = KeyPreview
	}
	if err := r.movePointer(ctx, pointer); err != nil {
		return err
	}
	r.res.Latest, _ = r.readPointer(ctx, KeyLatest)
	r.res.Preview, _ = r.readPointer(ctx, KeyPreview)
	return nil
}

func (r *publishRun) wrote(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Written = append(r.res.Written, key)
}

// checkVersion enforces the spec's version rules against the manifest.
func (r *publishRun) checkVersion(m *Manifest) error {
	prev, ok := m.PreviousRelease(r.v)
	if err := r.v.CheckPreview(prev, ok); err != nil {
		return err
	}
	if r.v.IsPreview() {
		rel := Version{Year: r.v.Year, Feature: r.v.Feature, Patch: r.v.Patch}
		if _, done := m.Find(rel.String()); done {
			return fmt.Errorf("preview %s: %s is already released; a preview comes before its release (the next previews are %02d.%d.%d-pre.C)",
				r.v, rel, rel.Year, rel.Feature, rel.Patch+1)
		}
	}
	return nil
}

func (r *publishRun) publicKeyPEM(ctx context.Context) ([]byte, error) {
	pub, err := r.Signer.PublicKey(ctx)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	return PublicKeyPEM(pub)
}

// readManifest reads releases.json; a missing one is an empty manifest
// with etag "".
func (r *publishRun) readManifest(ctx context.Context) (*Manifest, string, error) {
	o, err := r.Store.Open(ctx, KeyManifest)
	if errors.Is(err, ErrNotFound) {
		return &Manifest{Schema: ManifestSchema}, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	defer o.Close()
	m, err := ReadManifest(o)
	if err != nil {
		return nil, "", err
	}
	return m, o.Info().ETag, nil
}

// compareExisting hashes every input (its only read, since nothing is
// uploaded) and compares with the published release.
func (r *publishRun) compareExisting(ctx context.Context, old *Release, inputs []Input) error {
	sums := make([]string, len(inputs))
	err := r.parallel(ctx, len(inputs), func(ctx context.Context, i int) error {
		h := sha256.New()
		if err := readInput(inputs[i], h); err != nil {
			return err
		}
		sums[i] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	if err != nil {
		return err
	}
	var diffs []string
	seen := map[string]bool{}
	for i, in := range inputs {
		key := Key(in.Spec.Kind, in.Spec.Name, r.v, in.Build)
		seen[key] = true
		a, ok := findArtifact(old.Artifacts, key)
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s is not in the published release", key))
		case a.SHA256 != sums[i]:
			diffs = append(diffs, fmt.Sprintf("%s: published sha256 %s, this input %s", key, a.SHA256, sums[i]))
		}
	}
	for _, a := range old.Artifacts {
		if !seen[a.Key] {
			diffs = append(diffs, fmt.Sprintf("%s is published but not in this input", a.Key))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%w; versions are immutable, publish a new version:\n  %s", ErrVersionExists, strings.Join(diffs, "\n  "))
	}
	return nil
}

// checkSigner refuses to go on with a published release whose artifacts
// were signed by another key than the signer's, before anything is
// written: that run would hand out another dl.pub and install script and
// re-sign the SHA256SUMS, while every artifact keeps its old signature.
func (r *publishRun) checkSigner(ctx context.Context, old *Release) error {
	for _, a := range old.Artifacts {
		if a.Signature == "" {
			continue
		}
		digest, err := hex.DecodeString(a.SHA256)
		if err != nil {
			return fmt.Errorf("%s: sha256 %q in %s: %w", a.Key, a.SHA256, KeyManifest, err)
		}
		if !r.validSig(ctx, digest, []byte(a.Signature)) {
			return fmt.Errorf("%w: %s does not verify under this --key; publish %s with the key that signed it, or publish a new version", ErrOtherKey, a.Key, r.v)
		}
	}
	return nil
}

func findArtifact(arts []Artifact, key string) (Artifact, bool) {
	for _, a := range arts {
		if a.Key == key {
			return a, true
		}
	}
	return Artifact{}, false
}

// readInput copies the artifact bytes of in to w: the file as it is, or
// the packed archive of an executable.
func readInput(in Input, w io.Writer) error {
	f, err := in.open()
	if err != nil {
		return err
	}
	defer f.Close()
	if in.Form == FormExecutable {
		return Pack(w, in.Spec.Executable, f, in.Size)
	}
	n, err := io.Copy(w, f)
	if err != nil {
		return fmt.Errorf("read %s: %w", in.Path, err)
	}
	if n != in.Size {
		return fmt.Errorf("read %s: %d bytes, was %d (did the file change?)", in.Path, n, in.Size)
	}
	return nil
}

// parallel runs f for 0..n-1 on at most r.Parallel goroutines and returns
// the first error, canceling the others.
func (r *publishRun) parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	workers := max(1, min(r.Parallel, n))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if ctx.Err() != nil {
					continue
				}
				if err := f(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

// uploadArtifacts uploads every input and its signature, in parallel, and
// returns the manifest entries in input order.
func (r *publishRun) uploadArtifacts(ctx context.Context, inputs []Input) ([]Artifact, error) {
	arts := make([]Artifact, len(inputs))
	err := r.parallel(ctx, len(inputs), func(ctx context.Context, i int) error {
		a, err := r.uploadArtifact(ctx, inputs[i])
		arts[i] = a
		return err
	})
	if err != nil {
		return nil, err
	}
	return arts, nil
}

// uploadArtifact streams one input into the store, hashing it on the way
// (the only read of the file), checks the stored object against that
// digest, signs the digest and writes the .sig beside it.
//
// The artifact is written only if absent (IfNoneMatch): an object left by
// an unfinished earlier publish of this version is kept when its bytes are
// the same and refused when they differ, so a canonical URL never changes
// content.
func (r *publishRun) uploadArtifact(ctx context.Context, in Input) (Artifact, error) {
	key := Key(in.Spec.Kind, in.Spec.Name, r.v, in.Build)
	a := Artifact{
		Name: in.Spec.Name, Kind: in.Spec.Kind, Build: in.Build.Name, OS: in.Build.OS,
		Platform: in.Build.Platform, Key: key, Access: in.Spec.Access,
	}
	f, err := in.open()
	if err != nil {
		return a, err
	}
	defer f.Close()
	var src io.Reader = f
	size := in.Size
	ctype := "application/x-tar"
	if in.Kind() == KindBinary {
		ctype = "application/gzip"
	}
	if in.Form == FormExecutable {
		pr := packReader(in.Spec.Executable, f, in.Size)
		defer pr.Close()
		src, size = pr, -1
	}
	tr := r.Progress.Start(key, size)
	cr := newCountingReader(src, tr)
	info, err := r.Store.Put(ctx, key, cr, size, PutOptions{ContentType: ctype, CacheControl: CacheControl(key, a.Access), IfNoneMatch: true})
	if errors.Is(err, ErrPreconditionFailed) {
		a, err := r.adoptExisting(ctx, a, cr)
		tr.Done(err)
		return a, err
	}
	if err != nil {
		tr.Done(err)
		return a, err
	}
	tr.Done(nil)
	a.Size = cr.n
	a.SHA256 = hex.EncodeToString(cr.SHA256())
	if err := r.checkStored(ctx, key, info, a.SHA256); err != nil {
		return a, err
	}
	r.wrote(key)
	return r.sign(ctx, a)
}

// adoptExisting handles an artifact key that already holds an object: it
// finishes hashing the input (continuing the same single read) and keeps
// the object if it has the same bytes.
func (r *publishRun) adoptExisting(ctx context.Context, a Artifact, cr *countingReader) (Artifact, error) {
	if _, err := io.Copy(io.Discard, cr); err != nil {
		return a, err
	}
	a.Size = cr.n
	a.SHA256 = hex.EncodeToString(cr.SHA256())
	got, err := r.storedDigest(ctx, a.Key)
	if err != nil {
		return a, err
	}
	if got != a.SHA256 {
		return a, fmt.Errorf("%w: %s exists with sha256 %s, this input has %s (an unfinished publish of %s left other bytes; versions are immutable, publish a new version)",
			ErrVersionExists, a.Key, got, a.SHA256, r.v)
	}
	r.Progress.Logf("%s already in the store with the same bytes (an earlier run); kept", a.Key)
	return r.sign(ctx, a)
}

// sign signs the artifact's digest and writes its .sig, unless a valid
// signature by the same key is there already (an earlier run, or a
// concurrent publisher of the same bytes), which is then adopted so that
// the manifest and the .sig object always agree.
func (r *publishRun) sign(ctx context.Context, a Artifact) (Artifact, error) {
	digest, _ := hex.DecodeString(a.SHA256)
	sigKey := SigKey(a.Key)
	existing, etag, err := r.readSmall(ctx, sigKey)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return a, err
	}
	if err == nil && r.validSig(ctx, digest, existing) {
		a.Signature = string(existing)
		return a, nil
	}
	der, err := r.Signer.SignDigest(ctx, digest)
	if err != nil {
		return a, fmt.Errorf("sign %s: %w", a.Key, err)
	}
	sig := SignatureText(der)
	opts := PutOptions{ContentType: "text/plain; charset=utf-8", IfNoneMatch: etag == ""}
	if etag != "" {
		opts.IfMatch = etag
	}
	if err := r.putSmall(ctx, sigKey, sig, opts); err != nil {
		if errors.Is(err, ErrPreconditionFailed) {
			return r.sign(ctx, a) // another publisher wrote one meanwhile
		}
		return a, err
	}
	a.Signature = string(sig)
	return a, nil
}

func (r *publishRun) validSig(ctx context.Context, digest, sigText []byte) bool {
	pub, err := r.Signer.PublicKey(ctx)
	if err != nil {
		return false
	}
	return VerifyDigest(pub, digest, sigText) == nil
}

// ensureSigs rewrites a missing or wrong .sig of a published release from
// the manifest, so a re-run repairs what an interrupted one left.
func (r *publishRun) ensureSigs(ctx context.Context, arts []Artifact) error {
	for _, a := range arts {
		if a.Signature == "" {
			continue
		}
		if err := r.putIfChanged(ctx, SigKey(a.Key), []byte(a.Signature), "text/plain; charset=utf-8", false); err != nil {
			return err
		}
	}
	return nil
}

// checkStored checks the uploaded object against the digest it was signed
// over: with the store's own SHA-256 when it keeps one, else by reading it
// back.
func (r *publishRun) checkStored(ctx context.Context, key string, info ObjectInfo, want string) error {
	got := info.SHA256
	if got == "" {
		var err error
		if got, err = r.storedDigest(ctx, key); err != nil {
			return fmt.Errorf("check %s: %w", key, err)
		}
	}
	if !strings.EqualFold(got, want) {
		return fmt.Errorf("check %s: stored object has sha256 %s, uploaded %s", key, got, want)
	}
	return nil
}

// storedDigest is the SHA-256 of the object at key: the store's, or read
// back.
func (r *publishRun) storedDigest(ctx context.Context, key string) (string, error) {
	st, err := r.Store.Stat(ctx, key)
	if err != nil {
		return "", err
	}
	if st.SHA256 != "" {
		return strings.ToLower(st.SHA256), nil
	}
	o, err := r.Store.Open(ctx, key)
	if err != nil {
		return "", err
	}
	defer o.Close()
	h := sha256.New()
	if _, err := io.Copy(h, o); err != nil {
		return "", fmt.Errorf("read back %s: %w", key, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeSums writes SHA256SUMS (sha256sum format) and its .sig for each
// kind of the release.
func (r *publishRun) writeSums(ctx context.Context, arts []Artifact, inputs []Input) error {
	kinds := map[string][]Artifact{}
	var order []string
	if r.DryRun && !r.res.Existing {
		for _, in := range inputs {
			if _, ok := kinds[in.Kind()]; !ok {
				order = append(order, in.Kind())
			}
			kinds[in.Kind()] = nil
		}
		for _, k := range order {
			r.wrote(SumsKey(k, r.v))
			r.wrote(SigKey(SumsKey(k, r.v)))
		}
		return nil
	}
	for _, a := range arts {
		if _, ok := kinds[a.Kind]; !ok {
			order = append(order, a.Kind)
		}
		kinds[a.Kind] = append(kinds[a.Kind], a)
	}
	for _, kind := range order {
		list := slices.Clone(kinds[kind])
		sort.Slice(list, func(i, j int) bool { return list[i].FileName() < list[j].FileName() })
		var b bytes.Buffer
		for _, a := range list {
			fmt.Fprintf(&b, "%s  %s\n", a.SHA256, a.FileName())
		}
		key := SumsKey(kind, r.v)
		old, _, err := r.readSmall(ctx, key)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if err == nil && bytes.Equal(old, b.Bytes()) {
			// Same content; keep its signature if it is valid.
			sum := sha256.Sum256(old)
			if sig, _, err := r.readSmall(ctx, SigKey(key)); err == nil && r.validSig(ctx, sum[:], sig) {
				continue
			}
		} else if err := r.putSmall(ctx, key, b.Bytes(), PutOptions{ContentType: "text/plain; charset=utf-8"}); err != nil {
			return err
		}
		sum := sha256.Sum256(b.Bytes())
		der, err := r.Signer.SignDigest(ctx, sum[:])
		if err != nil {
			return fmt.Errorf("sign %s: %w", key, err)
		}
		if err := r.putSmall(ctx, SigKey(key), SignatureText(der), PutOptions{ContentType: "text/plain; charset=utf-8"}); err != nil {
			return err
		}
	}
	return nil
}

// mergeManifest adds the release to releases.json with a compare-and-swap
// loop: a concurrent publisher's version is never lost.
func (r *publishRun) mergeManifest(ctx context.Context, arts []Artifact) error {
	for {
		m, etag, err := r.readManifest(ctx)
		if err != nil {
			return err
		}
		if old, ok := m.Find(r.v.String()); ok {
			if !sameArtifacts(old.Artifacts, arts) {
				return fmt.Errorf("%w: %s was published meanwhile with other artifacts", ErrVersionExists, r.v)
			}
			return nil
		}
		// A concurrent publish may have added the release this preview
		// follows.
		if err := r.checkVersion(m); err != nil {
			return err
		}
		m.Merge(Release{Version: r.v.String(), Kind: r.v.Kind(), Published: r.Now().UTC(), Artifacts: arts})
		var b bytes.Buffer
		if err := m.Encode(&b); err != nil {
			return fmt.Errorf("encode %s: %w", KeyManifest, err)
		}
		err = r.putSmall(ctx, KeyManifest, b.Bytes(), PutOptions{ContentType: "application/json", IfMatch: etag, IfNoneMatch: etag == ""})
		if errors.Is(err, ErrPreconditionFailed) {
			r.Progress.Logf("%s changed meanwhile (another publisher); merging again", KeyManifest)
			continue
		}
		return err
	}
}

func sameArtifacts(a, b []Artifact) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		y, ok := findArtifact(b, x.Key)
		if !ok || y.SHA256 != x.SHA256 || y.Size != x.Size {
			return false
		}
	}
	return true
}

// writeDerived writes _redirects and index.html from the manifest. Both
// depend on every release, so each write is conditional on the object it
// replaces and is redone when the manifest changed meanwhile: a slower
// publisher never overwrites them with an older view.
func (r *publishRun) writeDerived(ctx context.Context) error {
	if r.DryRun && !r.res.Existing {
		r.wrote(KeyRedirects)
		r.wrote(KeyIndex)
		return nil
	}
	for {
		m, etag, err := r.readManifest(ctx)
		if err != nil {
			return err
		}
		redirects, err := renderRedirects(r.redirects, m, r.BaseURL)
		if err != nil {
			return err
		}
		var index bytes.Buffer
		if err := r.page.RenderIndex(&index, m, r.BaseURL); err != nil {
			return fmt.Errorf("render %s: %w", KeyIndex, err)
		}
		for _, f := range []struct {
			key, ctype string
			body       []byte
		}{
			{KeyRedirects, "text/plain; charset=utf-8", redirects},
			{KeyIndex, "text/html; charset=utf-8", index.Bytes()},
		} {
			if err := r.casIfChanged(ctx, f.key, f.body, f.ctype); err != nil {
				return err
			}
		}
		_, now, err := r.readManifest(ctx)
		if err != nil {
			return err
		}
		if now == etag {
			return nil
		}
		r.Progress.Logf("%s changed meanwhile (another publisher); rendering again", KeyManifest)
	}
}

// casIfChanged writes body at key unless it is there already, conditional
// on the object it replaces; a lost race is retried by the caller's loop,
// which re-reads the manifest.
func (r *publishRun) casIfChanged(ctx context.Context, key string, body []byte, ctype string) error {
	old, etag, err := r.readSmall(ctx, key)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err == nil && bytes.Equal(old, body) {
		return nil
	}
	err = r.putSmall(ctx, key, body, PutOptions{ContentType: ctype, IfMatch: etag, IfNoneMatch: etag == ""})
	if errors.Is(err, ErrPreconditionFailed) {
		return nil // someone else wrote it; the manifest check decides whether to redo
	}
	return err
}

// putIfChanged writes body at key unless the object has these bytes.
func (r *publishRun) putIfChanged(ctx context.Context, key string, body []byte, ctype string, warnReplace bool) error {
	old, _, err := r.readSmall(ctx, key)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err == nil && bytes.Equal(old, body) {
		return nil
	}
	if err == nil && warnReplace {
		r.Progress.Logf("warning: %s changes: this release is signed by another key than the one served until now", key)
	}
	return r.putSmall(ctx, key, body, PutOptions{ContentType: ctype})
}

func (r *publishRun) renderInstall(pubPEM []byte) ([]byte, error) {
	data := templates.InstallData{BaseURL: r.BaseURL, PublicKey: string(pubPEM)}
	for _, b := range r.Config.Binaries() {
		data.Binaries = append(data.Binaries, templates.InstallBinary{Name: b.Name, Executable: b.Executable, Access: b.Access})
	}
	var buf bytes.Buffer
	if err := r.install.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("render %s: %w", KeyInstall, err)
	}
	return buf.Bytes(), nil
}

// movePointer moves latest or preview to the published version if that is
// newer than what it names, with a compare-and-swap loop, so concurrent
// publishers never move it backwards.
func (r *publishRun) movePointer(ctx context.Context, key string) error {
	for {
		body, etag, err := r.readSmall(ctx, key)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if err == nil {
			cur, perr := ParseVersion(strings.TrimSpace(string(body)))
			if perr == nil && cur.Compare(r.v) >= 0 {
				if cur.Compare(r.v) > 0 {
					r.Progress.Logf("%s stays at %s (newer than %s)", key, cur, r.v)
				}
				return nil
			}
			if perr != nil {
				r.Progress.Logf("warning: %s held %q, not a version; replacing it", key, body)
			}
		}
		err = r.putSmall(ctx, key, []byte(r.v.String()+"\n"), PutOptions{ContentType: "text/plain; charset=utf-8", IfMatch: etag, IfNoneMatch: etag == ""})
		if errors.Is(err, ErrPreconditionFailed) {
			continue
		}
		if err == nil && !r.DryRun {
			r.Progress.Logf("%s is now %s", key, r.v)
		}
		return err
	}
}

func (r *publishRun) readPointer(ctx context.Context, key string) (string, error) {
	b, _, err := r.readSmall(ctx, key)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// readSmall reads a small object whole, with its ETag.
func (r *publishRun) readSmall(ctx context.Context, key string) ([]byte, string, error) {
	o, err := r.Store.Open(ctx, key)
	if err != nil {
		return nil, "", err
	}
	defer o.Close()
	b, err := io.ReadAll(io.LimitReader(o, 64<<20))
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", key, err)
	}
	return b, o.Info().ETag, nil
}

// putSmall writes a small object whose digest is known in advance, so the
// store verifies it on the way in.
func (r *publishRun) putSmall(ctx context.Context, key string, body []byte, opts PutOptions) error {
	if r.DryRun {
		r.wrote(key)
		return nil
	}
	sum := sha256.Sum256(body)
	opts.SHA256 = sum[:]
	if opts.CacheControl == "" {
		opts.CacheControl = CacheControl(key, "") // nothing small is an artifact
	}
	info, err := r.Store.Put(ctx, key, bytes.NewReader(body), int64(len(body)), opts)
	if err != nil {
		return err
	}
	if info.SHA256 != "" && !strings.EqualFold(info.SHA256, hex.EncodeToString(sum[:])) {
		return fmt.Errorf("check %s: stored sha256 %s, wrote %x", key, info.SHA256, sum)
	}
	r.wrote(key)
	return nil
}
