package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wharfhq/wharf/publish/oci"
)

// ImageAttestation is a DSSE envelope attached to an image, as
// releases.json lists it: the same statement cosign verify-attestation
// reads from the sha256-HEX.att of each of its subjects.
type ImageAttestation struct {
	PredicateType string `json:"predicate_type"`
	// Envelope is the digest of the envelope, a blob of the image's
	// repository and a layer of the attestation manifest of each subject.
	Envelope string `json:"envelope"`
	// Subjects are the digests the statement is about: the index and
	// every platform's manifest for the provenance, the index and one
	// platform's manifest for that platform's SBOM.
	Subjects []string `json:"subjects"`
}

// imageStatement is an attestation an image should carry.
type imageStatement struct {
	predicateType string
	subjects      []string
	predicate     any
}

func (s imageStatement) id() string { return s.predicateType + " " + strings.Join(s.subjects, ",") }

// imageStatements are the attestations of the image of plan p whose index
// and platform manifests out names: the build's provenance, when it is
// known, and each platform's SBOM, when its input has one.
func (r *publishRun) imageStatements(p *imagePlan, out Image) []imageStatement {
	var sts []imageStatement
	if !r.Provenance.IsZero() {
		sts = append(sts, imageStatement{PredicateSLSA, append([]string{out.Index}, platformDigests(out)...), r.Provenance.predicate()})
	}
	for i, in := range p.inputs {
		if sbom := r.sboms[Key(in.Spec.Kind, in.Spec.Name, r.v, in.Build)]; sbom != nil {
			sts = append(sts, imageStatement{PredicateCycloneDX, []string{out.Index, out.Platforms[i].Manifest}, json.RawMessage(sbom)})
		}
	}
	return sts
}

// attestImage attaches the image's attestations in the form cosign
// attest writes them: each statement signed into a DSSE envelope, stored
// as a blob, and an attestation manifest at sha256-HEX.att of the index
// and of every platform manifest listing, as layers, the envelopes about
// it. Envelopes an earlier run attached to the index that verify under
// the release key for the same subjects are kept (ECDSA signatures differ
// each time: a re-run must not churn them). It returns what
// releases.json lists.
func (r *publishRun) attestImage(ctx context.Context, p *imagePlan, out Image) ([]ImageAttestation, error) {
	sts := r.imageStatements(p, out)
	if len(sts) == 0 {
		return nil, nil
	}
	subjects := append([]string{out.Index}, platformDigests(out)...)
	if r.DryRun {
		for _, d := range subjects {
			r.wrote(RegistryManifestKey(out.Name, oci.AttestationTag(d))) // nothing is signed in a dry run
		}
		return nil, nil
	}
	kept, err := r.imageEnvelopes(ctx, out.Name, out.Index)
	if err != nil {
		return nil, err
	}
	envs := make([][]byte, len(sts))
	err = r.parallel(ctx, len(sts), func(ctx context.Context, i int) error {
		env, err := r.imageEnvelope(ctx, out, sts[i], kept)
		envs[i] = env
		return err
	})
	if err != nil {
		return nil, err
	}
	err = r.parallel(ctx, len(subjects), func(ctx context.Context, i int) error {
		return r.putAttestationManifest(ctx, out, subjects[i], sts, envs)
	})
	if err != nil {
		return nil, err
	}
	var atts []ImageAttestation
	for i, s := range sts {
		atts = append(atts, ImageAttestation{PredicateType: s.predicateType, Envelope: oci.Digest(envs[i]), Subjects: s.subjects})
	}
	return atts, nil
}

// imageEnvelope is the envelope of s, the one kept from an earlier run or
// signed now, written as a blob of the image.
func (r *publishRun) imageEnvelope(ctx context.Context, out Image, s imageStatement, kept map[string][]byte) ([]byte, error) {
	env := kept[s.id()]
	if env == nil {
		st, err := NewStatement(out.Repository, oci.Hex(s.subjects[0]), s.predicateType, s.predicate)
		if err != nil {
			return nil, err
		}
		for _, d := range s.subjects[1:] {
			st.Subject = append(st.Subject, Subject{Name: out.Repository, Digest: map[string]string{"sha256": oci.Hex(d)}})
		}
		line, err := SignStatement(ctx, r.Signer, st)
		if err != nil {
			return nil, fmt.Errorf("%s@%s: %w", out.Repository, out.Index, err)
		}
		env = bytes.TrimSuffix(line, []byte("\n"))
	}
	return env, r.putSmallBlob(ctx, out.Name, out.Access, env)
}

// putAttestationManifest writes the attestation manifest of digest d: a
// layer for each envelope about it, in the order of sts.
func (r *publishRun) putAttestationManifest(ctx context.Context, out Image, d string, sts []imageStatement, envs [][]byte) error {
	var layers []oci.AttestationLayer
	var digests []string
	for i, s := range sts {
		if slices.Contains(s.subjects, d) {
			layers = append(layers, oci.AttestationLayer{Envelope: envs[i], PredicateType: s.predicateType})
			digests = append(digests, oci.Digest(envs[i]))
		}
	}
	config := oci.SignatureConfig(digests...)
	if err := r.putSmallBlob(ctx, out.Name, out.Access, config); err != nil {
		return err
	}
	m, err := oci.AttestationManifest(config, layers)
	if err != nil {
		return err
	}
	return r.putTag(ctx, RegistryManifestKey(out.Name, oci.AttestationTag(d)), m, oci.MediaTypeManifest)
}

// imageEnvelopes are the envelopes an earlier run attached to the image
// of index that verify under the release key, by the statement they sign
// (imageStatement.id): those releases.json lists for it, then the layers
// of the index's attestation manifest (which may have been changed).
func (r *publishRun) imageEnvelopes(ctx context.Context, image, index string) (map[string][]byte, error) {
	var digests []string
	m, _, err := r.readManifest(ctx)
	if err != nil {
		return nil, err
	}
	if rel, ok := m.Find(r.v.String()); ok {
		for _, im := range rel.Images {
			if im.Name == image && im.Index == index {
				for _, at := range im.Attestations {
					digests = append(digests, at.Envelope)
				}
			}
		}
	}
	b, _, err := r.readSmall(ctx, RegistryManifestKey(image, oci.AttestationTag(index)))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if layers, perr := oci.ParseAttestationManifest(b); err == nil && perr == nil {
		for _, l := range layers {
			digests = append(digests, l.Digest)
		}
	}
	if len(digests) == 0 {
		return nil, nil
	}
	pub, err := r.Signer.PublicKey(ctx)
	if err != nil {
		return nil, err
	}
	kept := map[string][]byte{}
	for _, d := range digests {
		if !oci.ValidDigest(d) {
			continue
		}
		env, _, err := r.readSmall(ctx, RegistryBlobKey(image, d))
		if err != nil || oci.Digest(env) != d {
			continue
		}
		for _, pt := range []string{PredicateSLSA, PredicateCycloneDX} {
			if st, err := VerifyImageAttestation(pub, env, index, pt); err == nil {
				id := imageStatement{predicateType: st.PredicateType, subjects: st.Digests()}.id()
				if kept[id] == nil {
					kept[id] = env
				}
			}
		}
	}
	return kept, nil
}

// putSmallBlob writes b as a blob of image, unless it is there.
func (r *publishRun) putSmallBlob(ctx context.Context, image, access string, b []byte) error {
	key, d := RegistryBlobKey(image, oci.Digest(b)), oci.Digest(b)
	done, err := r.haveBlob(ctx, key, d, int64(len(b)))
	if err != nil || done {
		return err
	}
	if r.DryRun {
		r.wrote(key)
		return nil
	}
	return r.putBlob(ctx, key, d, bytes.NewReader(b), int64(len(b)), "application/octet-stream", access)
}

// putTag writes body at a tag's key unless it holds body already,
// conditionally on what it held.
func (r *publishRun) putTag(ctx context.Context, key string, body []byte, mediaType string) error {
	for {
		old, etag, err := r.readSmall(ctx, key)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if err == nil && bytes.Equal(old, body) {
			return nil
		}
		err = r.putSmall(ctx, key, body, PutOptions{ContentType: mediaType, CacheControl: CacheRevalidate, IfMatch: etag, IfNoneMatch: etag == ""})
		if !errors.Is(err, ErrPreconditionFailed) {
			return err
		}
	}
}
