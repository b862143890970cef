package publish

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/wharfhq/wharf/publish/oci"
)

// readImages reads every image input before anything is written, so that
// a corrupt archive, one of another platform or with foreign layers
// refuses the publish whole. It returns the images by input index.
func (r *publishRun) readImages(ctx context.Context, inputs []Input) (map[int]*oci.Image, error) {
	ims := make([]*oci.Image, len(inputs))
	states := make([]inputState, len(inputs))
	err := r.parallel(ctx, len(inputs), func(_ context.Context, i int) error {
		if inputs[i].Form != FormImage {
			return nil
		}
		im, st, err := readImage(inputs[i], r.Config.maxImageSize())
		if err != nil {
			return fmt.Errorf("%s: %w", inputs[i].Path, err)
		}
		ims[i], states[i] = im, st
		return nil
	})
	if err != nil {
		return nil, err
	}
	m := map[int]*oci.Image{}
	r.states = map[string]inputState{}
	for i, im := range ims {
		if im != nil {
			m[i] = im
			r.states[inputs[i].Path] = states[i]
		}
	}
	return m, nil
}

// readImage reads one image archive, and the state of its file before
// the read.
func readImage(in Input, maxSize int64) (*oci.Image, inputState, error) {
	f, err := in.open()
	if err != nil {
		return nil, inputState{}, err
	}
	defer f.Close()
	st, err := stateOf(f)
	if err != nil {
		return nil, st, err
	}
	head := make([]byte, headLen)
	n, _ := f.ReadAt(head, 0)
	if err := refuseHead(head[:n]); err != nil {
		return nil, st, err
	}
	im, err := oci.Read(f, in.Size, in.Build.Platform, oci.Limits{MaxSize: maxSize})
	return im, st, err
}

// imagePlan is one image of the release: its platforms, in build order.
type imagePlan struct {
	spec   ArtifactSpec
	inputs []Input
	images []*oci.Image
}

// planImages groups the image inputs by image name, in the order the
// config lists the images and the builds are listed.
func (r *publishRun) planImages(inputs []Input) []*imagePlan {
	var plans []*imagePlan
	byName := map[string]*imagePlan{}
	order := map[string]int{}
	for i, b := range Builds() {
		order[b.Name] = i
	}
	for i, in := range inputs {
		im := r.images[i]
		if im == nil {
			continue
		}
		p := byName[in.Spec.Name]
		if p == nil {
			p = &imagePlan{spec: in.Spec}
			byName[in.Spec.Name] = p
			plans = append(plans, p)
		}
		p.inputs = append(p.inputs, in)
		p.images = append(p.images, im)
	}
	for _, p := range plans {
		idx := make([]int, len(p.inputs))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return order[p.inputs[a].Build.Name] - order[p.inputs[b].Build.Name] })
		ins, ims := make([]Input, len(idx)), make([]*oci.Image, len(idx))
		for i, j := range idx {
			ins[i], ims[i] = p.inputs[j], p.images[j]
		}
		p.inputs, p.images = ins, ims
	}
	slices.SortStableFunc(plans, func(a, b *imagePlan) int { return strings.Compare(a.spec.Name, b.spec.Name) })
	return plans
}

// writeRegistry writes the registry tree of every image of the release,
// each object after everything it points at: the blobs (unless writeBlobs
// wrote them beside the archives' upload), the platform
// manifests by digest, the index by digest, the cosign signature of
// every manifest and of the index, their attestations (registry_attest.go),
// and last the version's tag. Blobs a
// version before wrote (a layer that did not change) are there already
// and not written again. It returns the images for releases.json.
func (r *publishRun) writeRegistry(ctx context.Context, inputs []Input) ([]Image, error) {
	if !r.blobsWritten {
		if err := r.writeBlobs(ctx, inputs); err != nil {
			return nil, err
		}
	}
	plans := r.planImages(inputs)
	out := make([]Image, len(plans))
	err := r.parallel(ctx, len(plans), func(ctx context.Context, i int) error {
		im, err := r.writeImage(ctx, plans[i])
		out[i] = im
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// writeBlobs writes the blobs of every image of the release, each once,
// in parallel. Nothing refers to a blob until its manifest is written, so
// publish writes them while the archives upload: the two streams of
// writes (and their fsyncs) overlap instead of following each other.
func (r *publishRun) writeBlobs(ctx context.Context, inputs []Input) error {
	type blobJob struct {
		image, access string
		in            Input
		blob          oci.Blob
	}
	var jobs []blobJob
	for _, p := range r.planImages(inputs) {
		seen := map[string]bool{}
		for i, im := range p.images {
			for _, b := range im.Blobs() {
				if !seen[b.Digest] {
					seen[b.Digest] = true
					jobs = append(jobs, blobJob{p.spec.Name, p.spec.Access, p.inputs[i], b})
				}
			}
		}
	}
	err := r.parallel(ctx, len(jobs), func(ctx context.Context, i int) error {
		j := jobs[i]
		return r.putBlobFrom(ctx, j.image, j.access, j.in, j.blob)
	})
	if err == nil {
		r.blobsWritten = true
	}
	return err
}

func (r *publishRun) writeImage(ctx context.Context, p *imagePlan) (Image, error) {
	name, access := p.spec.Name, p.spec.Access
	out := Image{Name: name, Repository: RegistryRepository(r.BaseURL, name), Access: access}
	var descs []oci.Descriptor
	for i, im := range p.images {
		if err := r.putManifest(ctx, name, access, im.ManifestDigest, im.Manifest, im.ManifestMediaType); err != nil {
			return out, err
		}
		size := int64(len(im.Manifest))
		for _, b := range im.Blobs() {
			size += b.Size
		}
		out.Platforms = append(out.Platforms, ImagePlatform{
			Build: p.inputs[i].Build.Name, Platform: im.Platform.String(), Manifest: im.ManifestDigest, Size: size,
		})
		descs = append(descs, im.Descriptor())
	}
	index, err := oci.NewIndex(descs)
	if err != nil {
		return out, err
	}
	out.Index, out.IndexSize = oci.Digest(index), int64(len(index))
	if err := r.putManifest(ctx, name, access, out.Index, index, oci.MediaTypeIndex); err != nil {
		return out, err
	}
	// The signatures and the attestations, at the same time: the tag,
	// written after them, is what a pull starts from.
	digests := append([]string{out.Index}, platformDigests(out)...)
	var atts []ImageAttestation
	err = r.parallel(ctx, len(digests)+1, func(ctx context.Context, i int) error {
		if i == len(digests) {
			var err error
			atts, err = r.attestImage(ctx, p, out)
			return err
		}
		return r.signImage(ctx, name, access, out.Repository, digests[i])
	})
	if err != nil {
		return out, err
	}
	out.Attestations = atts
	if err := r.putVersionTag(ctx, name, index); err != nil {
		return out, err
	}
	r.Progress.Logf("%s: %s (%d platforms), signed, %d attestations", out.Tag(r.v.String()), out.Index, len(out.Platforms), len(out.Attestations))
	return out, nil
}

func platformDigests(im Image) []string {
	var ds []string
	for _, p := range im.Platforms {
		ds = append(ds, p.Manifest)
	}
	return ds
}

// putBlobFrom copies one blob out of an input archive into the tree.
func (r *publishRun) putBlobFrom(ctx context.Context, image, access string, in Input, b oci.Blob) error {
	key := RegistryBlobKey(image, b.Digest)
	if done, err := r.haveBlob(ctx, key, b.Digest, b.Size); done || err != nil {
		return err
	}
	if r.DryRun {
		r.wrote(key)
		return nil
	}
	f, err := in.open()
	if err != nil {
		return err
	}
	defer f.Close()
	if !r.copiesSections() {
		return r.putBlob(ctx, key, b.Digest, io.NewSectionReader(f, b.Offset, b.Size), b.Size, "application/octet-stream", access)
	}
	// The blob's digest was taken when the archive was read; the store
	// may copy its bytes without reading them, so the file must be the
	// one read.
	sum, err := hex.DecodeString(oci.Hex(b.Digest))
	if err != nil {
		return fmt.Errorf("%s: digest %q", key, b.Digest)
	}
	if err := r.putBlob(ctx, key, b.Digest, NewFileSection(f, b.Offset, b.Size, sum), b.Size, "application/octet-stream", access); err != nil {
		return err
	}
	return unchanged(in, f, r.states[in.Path])
}

// haveBlob reports whether the content-addressed object at key is there
// with the size and, where the store keeps one, the digest it should
// have; one that is there with other bytes is an error (the tree is
// damaged: nothing overwrites it).
func (r *publishRun) haveBlob(ctx context.Context, key, digest string, size int64) (bool, error) {
	st, err := r.Store.Stat(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if st.Size != size || st.SHA256 != "" && !strings.EqualFold(st.SHA256, oci.Hex(digest)) {
		return false, fmt.Errorf("%s is in the store with %d bytes (sha256 %s), not the %d bytes of its digest: the tree is damaged; remove the object and publish again", key, st.Size, orNone(st.SHA256), size)
	}
	return true, nil
}

// putBlob writes a content-addressed object only if absent; the store
// checks the bytes against the digest on the way in.
func (r *publishRun) putBlob(ctx context.Context, key, digest string, src io.Reader, size int64, ctype, access string) error {
	sum, err := hex.DecodeString(oci.Hex(digest))
	if err != nil || len(sum) != sha256.Size {
		return fmt.Errorf("%s: digest %q", key, digest)
	}
	tr := r.Progress.Start(key, size)
	if _, ok := src.(*FileSection); !ok {
		// A section goes to the store as it is, for the store to copy.
		src = newCountingReader(src, tr)
	}
	info, err := r.Store.Put(ctx, key, src, size, PutOptions{
		ContentType: ctype, CacheControl: CacheControl(key, access), SHA256: sum, IfNoneMatch: true,
	})
	if errors.Is(err, ErrPreconditionFailed) {
		// A concurrent publisher of a version sharing the blob.
		_, err = r.haveBlob(ctx, key, digest, size)
		tr.Done(err)
		return err
	}
	tr.Done(err)
	if err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	if err := r.checkStored(ctx, key, info, oci.Hex(digest)); err != nil {
		return err
	}
	r.wrote(key)
	return nil
}

// putManifest writes a manifest or an index by its digest.
func (r *publishRun) putManifest(ctx context.Context, image, access, digest string, body []byte, mediaType string) error {
	key := RegistryManifestKey(image, digest)
	if done, err := r.haveBlob(ctx, key, digest, int64(len(body))); done || err != nil {
		return err
	}
	if r.DryRun {
		r.wrote(key)
		return nil
	}
	return r.putBlob(ctx, key, digest, bytes.NewReader(body), int64(len(body)), mediaType, access)
}

// putVersionTag writes the version's tag: the index, once. A tag there
// with other bytes is refused: a version's index never changes.
func (r *publishRun) putVersionTag(ctx context.Context, image string, index []byte) error {
	key := RegistryManifestKey(image, r.v.String())
	old, _, err := r.readSmall(ctx, key)
	switch {
	case err == nil && bytes.Equal(old, index):
		return nil
	case err == nil:
		return fmt.Errorf("%w: %s names the index %s, this release's is %s", ErrVersionExists, key, oci.Digest(old), oci.Digest(index))
	case !errors.Is(err, ErrNotFound):
		return err
	}
	err = r.putSmall(ctx, key, index, PutOptions{ContentType: oci.MediaTypeIndex, IfNoneMatch: true, CacheControl: CacheRevalidate})
	if errors.Is(err, ErrPreconditionFailed) {
		return r.putVersionTag(ctx, image, index)
	}
	return err
}

// signImage writes cosign's signature of the manifest or index of
// digest d: the simple-signing payload and a config as blobs, then the
// signature manifest (the payload as its layer, the signature in its
// annotation) at the tag sha256-HEX.sig. A signature there
// that verifies under the release key is kept (ECDSA signatures differ
// each time: a re-run must not churn them).
func (r *publishRun) signImage(ctx context.Context, image, access, repo, d string) error {
	tag := RegistryManifestKey(image, oci.SignatureTag(d))
	old, etag, err := r.readSmall(ctx, tag)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err == nil && r.validImageSig(ctx, image, d, old) {
		return nil
	}
	payload, err := oci.SignaturePayload(repo, d)
	if err != nil {
		return err
	}
	config := oci.SignatureConfig(oci.Digest(payload))
	for _, b := range [][]byte{payload, config} {
		if err := r.putSmallBlob(ctx, image, access, b); err != nil {
			return err
		}
	}
	if r.DryRun {
		r.wrote(tag) // nothing is signed in a dry run
		return nil
	}
	sum := sha256.Sum256(payload)
	der, err := r.Signer.SignDigest(ctx, sum[:])
	if err != nil {
		return fmt.Errorf("sign %s@%s: %w", repo, d, err)
	}
	// The signature manifest is served by its tag alone, as cosign
	// writes it; its digest changes with every signature.
	sigManifest, err := oci.SignatureManifest(config, payload, string(SignatureText(der)))
	if err != nil {
		return err
	}
	opts := PutOptions{ContentType: oci.MediaTypeManifest, CacheControl: CacheRevalidate, IfMatch: etag, IfNoneMatch: etag == ""}
	err = r.putSmall(ctx, tag, sigManifest, opts)
	if errors.Is(err, ErrPreconditionFailed) {
		return r.signImage(ctx, image, access, repo, d)
	}
	return err
}

// validImageSig reports whether sigManifest is a signature manifest of
// digest d by the release key whose payload is in the tree.
func (r *publishRun) validImageSig(ctx context.Context, image, d string, sigManifest []byte) bool {
	pub, err := r.Signer.PublicKey(ctx)
	if err != nil {
		return false
	}
	pd, sig, err := oci.ParseSignatureManifest(sigManifest)
	if err != nil {
		return false
	}
	payload, _, err := r.readSmall(ctx, RegistryBlobKey(image, pd))
	if err != nil || oci.Digest(payload) != pd {
		return false
	}
	return VerifyImageSignature(pub, d, payload, []byte(sig)) == nil
}

// VerifyImageSignature checks a cosign signature (base64 DER) of a
// simple-signing payload under pub, and that the payload signs for
// digest d. Errors: ErrBadSignature.
func VerifyImageSignature(pub *ecdsa.PublicKey, d string, payload, sig []byte) error {
	_, got, err := oci.ParseSignaturePayload(payload)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	if got != d {
		return fmt.Errorf("%w: the payload signs for %s, not %s", ErrBadSignature, got, d)
	}
	sum := sha256.Sum256(payload)
	return VerifyDigest(pub, sum[:], sig)
}

// writeImageTags points the tag of a pointer (latest or preview) of every
// image at the index of the release the pointer names, after the pointer
// moved. The tag is read before the pointer and written conditionally on
// it, so a concurrent publisher's newer tag is never replaced by an
// older one.
func (r *publishRun) writeImageTags(ctx context.Context, pointer string) error {
	if r.DryRun {
		// Nothing is in releases.json yet: the tags of this release,
		// when its pointer names it.
		if cur, err := r.readPointer(ctx, pointer); err == nil {
			if v, err := ParseVersion(cur); err == nil && v.Compare(r.v) > 0 {
				return nil
			}
		}
		for _, im := range r.imgs {
			r.wrote(RegistryManifestKey(im.Name, pointer))
		}
		return nil
	}
	for {
		retry, err := r.writeImageTagsOnce(ctx, pointer)
		if err != nil || !retry {
			return err
		}
	}
}

func (r *publishRun) writeImageTagsOnce(ctx context.Context, pointer string) (retry bool, err error) {
	m, _, err := r.readManifest(ctx)
	if err != nil {
		return false, err
	}
	type cur struct {
		body []byte
		etag string
	}
	var names []string
	for _, rel := range m.Releases {
		for _, im := range rel.Images {
			if !slices.Contains(names, im.Name) {
				names = append(names, im.Name)
			}
		}
	}
	tags := map[string]cur{}
	for _, n := range names {
		b, etag, err := r.readSmall(ctx, RegistryManifestKey(n, pointer))
		if err != nil && !errors.Is(err, ErrNotFound) {
			return false, err
		}
		tags[n] = cur{b, etag}
	}
	ver, err := r.readPointer(ctx, pointer)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	rel, ok := m.Find(ver)
	if !ok {
		return false, nil
	}
	for _, im := range rel.Images {
		index, _, err := r.readSmall(ctx, RegistryManifestKey(im.Name, im.Index))
		if err != nil {
			return false, fmt.Errorf("%s:%s: %w", im.Name, pointer, err)
		}
		if oci.Digest(index) != im.Index {
			return false, fmt.Errorf("%s: the index at %s has the digest %s", im.Name, im.Index, oci.Digest(index))
		}
		c := tags[im.Name]
		if bytes.Equal(c.body, index) {
			continue
		}
		key := RegistryManifestKey(im.Name, pointer)
		err = r.putSmall(ctx, key, index, PutOptions{ContentType: oci.MediaTypeIndex, CacheControl: CacheRevalidate, IfMatch: c.etag, IfNoneMatch: c.etag == ""})
		if errors.Is(err, ErrPreconditionFailed) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if !r.DryRun {
			r.Progress.Logf("%s is now %s (%s)", im.Tag(pointer), ver, im.Index)
		}
	}
	return false, nil
}
