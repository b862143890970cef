package publish

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/wharfhq/wharf/internal/parallel"
	"github.com/wharfhq/wharf/publish/oci"
)

// uploadArtifacts uploads every input and its signature, in parallel, and
// returns the manifest entries in input order.
func (r *publishRun) uploadArtifacts(ctx context.Context, inputs []Input) ([]Artifact, error) {
	arts := make([]Artifact, len(inputs))
	err := r.parallel(ctx, len(inputs), func(ctx context.Context, i int) error {
		a, err := r.uploadArtifact(ctx, inputs[i], r.images[i])
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
// content. An image's archive must have the bytes it had when it was read
// into its registry tree (im): its blobs are copied out of it.
func (r *publishRun) uploadArtifact(ctx context.Context, in Input, im *oci.Image) (Artifact, error) {
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
	if im != nil && r.copiesSections() {
		return r.uploadImageArchive(ctx, in, im, f, a)
	}
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
	src, err = refuseSignContext(src)
	if err != nil {
		return a, fmt.Errorf("%s: %w", in.Path, err)
	}
	tr := r.Progress.Start(key, size)
	cr := newCountingReader(src, tr)
	info, err := r.Store.Put(ctx, key, cr, size, PutOptions{ContentType: ctype, CacheControl: CacheControl(key, a.Access), IfNoneMatch: true})
	if errors.Is(err, ErrPreconditionFailed) {
		a, err := r.adoptExisting(ctx, a, cr)
		if err == nil {
			err = changedImage(in, im, a.SHA256)
		}
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
	if err := changedImage(in, im, a.SHA256); err != nil {
		return a, err
	}
	r.wrote(key)
	return r.signAndAttest(ctx, a)
}

// uploadImageArchive writes an image archive whose digest readImages
// took (im.SHA256; its first bytes checked there too) as a FileSection,
// which the directory store copies in the kernel without reading it, and
// checks afterwards that the file is still the one read.
func (r *publishRun) uploadImageArchive(ctx context.Context, in Input, im *oci.Image, f *os.File, a Artifact) (Artifact, error) {
	sum, err := hex.DecodeString(im.SHA256)
	if err != nil || len(sum) != sha256.Size {
		return a, fmt.Errorf("%s: digest %q", in.Path, im.SHA256)
	}
	a.Size, a.SHA256 = in.Size, strings.ToLower(im.SHA256)
	tr := r.Progress.Start(a.Key, in.Size)
	info, err := r.Store.Put(ctx, a.Key, NewFileSection(f, 0, in.Size, sum), in.Size, PutOptions{
		ContentType: "application/x-tar", CacheControl: CacheControl(a.Key, a.Access), IfNoneMatch: true,
	})
	if errors.Is(err, ErrPreconditionFailed) {
		var got string
		if got, err = r.storedDigest(ctx, a.Key); err == nil && got != a.SHA256 {
			err = fmt.Errorf("%w: %s exists with sha256 %s, this input has %s (an unfinished publish of %s left other bytes; versions are immutable, publish a new version)",
				ErrVersionExists, a.Key, got, a.SHA256, r.v)
		}
		if err == nil {
			err = unchanged(in, f, r.states[in.Path])
		}
		tr.Done(err)
		if err != nil {
			return a, err
		}
		r.Progress.Logf("%s already in the store with the same bytes (an earlier run); kept", a.Key)
		return r.signAndAttest(ctx, a)
	}
	tr.Done(err)
	if err != nil {
		return a, err
	}
	if err := r.checkStored(ctx, a.Key, info, a.SHA256); err != nil {
		return a, err
	}
	if err := unchanged(in, f, r.states[in.Path]); err != nil {
		return a, err
	}
	r.wrote(a.Key)
	return r.signAndAttest(ctx, a)
}

// signAndAttest writes the artifact's signature and its attestations,
// at the same time: neither reads the other, and releases.json, written
// after both, is what lists them.
func (r *publishRun) signAndAttest(ctx context.Context, a Artifact) (Artifact, error) {
	var signed, attested Artifact
	err := parallel.Do(ctx, 2, 2, func(ctx context.Context, i int) error {
		var err error
		if i == 0 {
			signed, err = r.sign(ctx, a)
		} else {
			attested, err = r.attest(ctx, a)
		}
		return err
	})
	if err != nil {
		return a, err
	}
	signed.Attestations = attested.Attestations
	return signed, nil
}

// ErrLooksLikeMetadata is returned by Publish and CheckInput for an input
// that starts as the context metadata is signed in (IsSignContext): its
// artifact signature would be a signature of metadata.
var ErrLooksLikeMetadata = errors.New("starts with \"" + contextMagic + "\", the context wharf signs metadata in: its signature would pass for a channel record's or a SHA256SUMS'; not publishing it")

// ErrLooksLikeJSON is returned by Publish and CheckInput for an input
// that starts as a JSON object: its artifact signature would be a
// signature of an image signature payload, which cosign accepts.
var ErrLooksLikeJSON = errors.New("starts as a JSON object, as the payload of an image signature does: its signature would pass for a cosign signature of an image; not publishing it")

// refuseSignContext returns a reader of the same bytes as src, after
// checking its first bytes are no metadata signing context.
func refuseSignContext(src io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(src, 64<<10)
	head, err := br.Peek(headLen)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return br, refuseHead(head)
}

// headLen is how many first bytes of an input refuseHead looks at.
const headLen = 512

// refuseHead refuses an input whose first bytes could pass for what the
// release key signs in another kind: a metadata signing context, or a
// JSON object such as the payload of an image signature (cosign signs a
// payload bare, as an artifact is signed).
func refuseHead(head []byte) error {
	if IsSignContext(head) {
		return ErrLooksLikeMetadata
	}
	if oci.LooksLikeJSON(head) {
		return ErrLooksLikeJSON
	}
	return nil
}

// ErrInputChanged is returned by Publish for an image archive whose bytes
// changed between its first read and its upload.
var ErrInputChanged = errors.New("the input changed while it was published")

// changedImage refuses an image archive that does not have the digest it
// had when it was first read.
func changedImage(in Input, im *oci.Image, sha string) error {
	if im == nil || strings.EqualFold(im.SHA256, sha) {
		return nil
	}
	return fmt.Errorf("%s: %w: read with sha256 %s, uploaded with %s; publish again once it is written", in.Path, ErrInputChanged, im.SHA256, sha)
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
	return r.signAndAttest(ctx, a)
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
