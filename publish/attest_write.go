package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// attest writes the artifact's attestations beside it (its provenance,
// when the build is known; its SBOM, when one is) and lists them in a. A
// kind a lists already is left as it is; an attestation there already
// that verifies for these bytes (an earlier run's) is kept, so
// releases.json and the objects agree.
func (r *publishRun) attest(ctx context.Context, a Artifact) (Artifact, error) {
	listed := func(predicateType string) bool {
		return slices.ContainsFunc(a.Attestations, func(at Attestation) bool { return at.PredicateType == predicateType })
	}
	a.Attestations = slices.Clone(a.Attestations)
	if !r.Provenance.IsZero() && !listed(PredicateSLSA) {
		st, err := ProvenanceStatement(r.Provenance, a.FileName(), a.SHA256)
		if err != nil {
			return a, err
		}
		att, err := r.writeAttestation(ctx, a, ProvenanceKey(a.Key), st)
		if err != nil {
			return a, err
		}
		a.Attestations = append(a.Attestations, att)
	}
	if sbom := r.sboms[a.Key]; sbom != nil && !listed(PredicateCycloneDX) {
		st, err := NewStatement(a.FileName(), a.SHA256, PredicateCycloneDX, json.RawMessage(sbom))
		if err != nil {
			return a, err
		}
		att, err := r.writeAttestation(ctx, a, SBOMAttestationKey(a.Key), st)
		if err != nil {
			return a, err
		}
		a.Attestations = append(a.Attestations, att)
	}
	return a, nil
}

// attestMissing gives the artifacts of a version published already the
// attestations they lack and this run can make: the provenance of the
// build the flags or the CI describe, the SBOMs of its inputs (whose
// bytes compareExisting found to be the published ones). An artifact, its
// signature and an attestation listed already are never rewritten. It
// returns how many it added.
func (r *publishRun) attestMissing(ctx context.Context, arts []Artifact) ([]Artifact, int, error) {
	out := slices.Clone(arts)
	err := r.parallel(ctx, len(out), func(ctx context.Context, i int) error {
		a, err := r.attest(ctx, out[i])
		if err != nil {
			return fmt.Errorf("%s: %w", out[i].Key, err)
		}
		out[i] = a
		return nil
	})
	if err != nil {
		return arts, 0, err
	}
	added := 0
	for i := range out {
		added += len(out[i].Attestations) - len(arts[i].Attestations)
	}
	return out, added, nil
}

// readInputs reads every input once before anything is written: its
// SHA-256 (for the claim) and its SBOM (read or made), so that a bad one
// refuses the publish whole; an image's digest is the one readImages
// took, and its file is not read again. It sets r.sums and r.sboms.
func (r *publishRun) readInputs(ctx context.Context, inputs []Input) error {
	facts := make([]inputFacts, len(inputs))
	err := r.parallel(ctx, len(inputs), func(_ context.Context, i int) error {
		var known string
		if im := r.images[i]; im != nil {
			known = im.SHA256
		}
		f, err := readFacts(inputs[i], known)
		if err != nil {
			return fmt.Errorf("%s: %w", inputs[i].Path, err)
		}
		facts[i] = f
		return nil
	})
	if err != nil {
		return err
	}
	r.sums = make([]string, len(inputs))
	r.sboms = map[string][]byte{}
	for i, in := range inputs {
		r.sums[i] = facts[i].sha256
		if facts[i].sbom != nil {
			r.sboms[Key(in.Spec.Kind, in.Spec.Name, r.v, in.Build)] = facts[i].sbom
		}
	}
	return nil
}

// writeAttestation signs st and writes it at key, unless an attestation
// of the same predicate type for a's bytes by this key is there.
func (r *publishRun) writeAttestation(ctx context.Context, a Artifact, key string, st *Statement) (Attestation, error) {
	att := Attestation{PredicateType: st.PredicateType, Key: key}
	existing, etag, err := r.readSmall(ctx, key)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return att, err
	}
	if err == nil {
		if pub, perr := r.Signer.PublicKey(ctx); perr == nil {
			if _, verr := VerifyAttestation(pub, existing, a.FileName(), a.SHA256, st.PredicateType); verr == nil {
				sum := sha256.Sum256(existing)
				att.SHA256 = hex.EncodeToString(sum[:])
				return att, nil
			}
		}
	}
	body, err := SignStatement(ctx, r.Signer, st)
	if err != nil {
		return att, fmt.Errorf("%s: %w", key, err)
	}
	// An attestation is read with the access class of its artifact, and
	// kept by shared caches only when that is public.
	opts := PutOptions{ContentType: AttestationContentType(st.PredicateType), CacheControl: CacheControl(key, a.Access), IfNoneMatch: etag == ""}
	if etag != "" {
		opts.IfMatch = etag
	}
	if err := r.putSmall(ctx, key, body, opts); err != nil {
		if errors.Is(err, ErrPreconditionFailed) {
			return r.writeAttestation(ctx, a, key, st)
		}
		return att, err
	}
	sum := sha256.Sum256(body)
	att.SHA256 = hex.EncodeToString(sum[:])
	return att, nil
}
