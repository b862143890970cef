package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// attest writes the artifact's attestations beside it (its provenance,
// when the build is known) and lists them in a. An attestation there
// already that verifies for these bytes (an earlier run's) is kept, so
// releases.json and the objects agree.
func (r *publishRun) attest(ctx context.Context, a Artifact) (Artifact, error) {
	if !r.Provenance.IsZero() {
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
	if sbom := r.sboms[a.Key]; sbom != nil {
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

// readSBOMs reads or makes the SBOM of every input before anything is
// written, so that a bad one refuses the publish whole.
func (r *publishRun) readSBOMs(ctx context.Context, inputs []Input) (map[string][]byte, error) {
	boms := make([][]byte, len(inputs))
	err := r.parallel(ctx, len(inputs), func(_ context.Context, i int) error {
		b, err := sbomOf(inputs[i])
		if err != nil {
			return fmt.Errorf("%s: %w", inputs[i].Path, err)
		}
		boms[i] = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	m := map[string][]byte{}
	for i, in := range inputs {
		if boms[i] != nil {
			m[Key(in.Spec.Kind, in.Spec.Name, r.v, in.Build)] = boms[i]
		}
	}
	return m, nil
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
	opts := PutOptions{ContentType: "application/vnd.dsse.envelope.v1+json", IfNoneMatch: etag == ""}
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
