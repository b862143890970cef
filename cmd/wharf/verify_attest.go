package main

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/oci"
)

// verifyAttestations checks the attestations beside a verified download
// (file, of SHA-256 sum) and prints what each states.
func verifyAttestations(c *cli.Context, pub *ecdsa.PublicKey, file, sum string) error {
	name := filepath.Base(file)
	for _, a := range []struct {
		path, predicateType, what string
	}{
		{publish.ProvenanceKey(file), publish.PredicateSLSA, "provenance"},
		{publish.SBOMAttestationKey(file), publish.PredicateCycloneDX, "SBOM"},
	} {
		env, err := os.ReadFile(a.path)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(c.App.Writer, "%s: no %s beside it (%s)\n", file, a.what, filepath.Base(a.path))
			continue
		}
		if err != nil {
			return shell.Usagef("verify %s: %s: %w", file, a.what, err)
		}
		st, err := publish.VerifyAttestation(pub, env, name, sum, a.predicateType)
		if err != nil {
			return fmt.Errorf("verify %s: INVALID: %s %s: %w", file, a.what, a.path, err)
		}
		fmt.Fprintf(c.App.Writer, "%s: %s OK (%s%s)\n", file, a.what, a.path, describe(st))
	}
	return nil
}

// verifyTreeAttestations checks every attestation releases.json lists:
// the object is there with the SHA-256 listed, sits where its kind goes
// beside its artifact, and is a DSSE envelope signed by pub whose
// statement is of the listed predicate type about the artifact's name
// and SHA-256. It returns how many of each kind it checked.
func verifyTreeAttestations(pub *ecdsa.PublicKey, t treeReader, m *publish.Manifest) (map[string]int, error) {
	n := map[string]int{}
	for _, rel := range m.Releases {
		for _, a := range rel.Artifacts {
			for _, at := range a.Attestations {
				if err := verifyTreeAttestation(pub, t, a, at); err != nil {
					return n, err
				}
				n[at.PredicateType]++
			}
		}
	}
	return n, nil
}

// verifyTreeAttestation checks one attestation of artifact a.
func verifyTreeAttestation(pub *ecdsa.PublicKey, t treeReader, a publish.Artifact, at publish.Attestation) error {
	file := t.name(at.Key)
	kind, ok := attestationKind(at.PredicateType)
	if !ok {
		return fmt.Errorf("verify %s: INVALID: %s lists it for %s with predicate type %q, which wharf does not attest", file, publish.KeyManifest, a.Key, at.PredicateType)
	}
	if want := a.Key + kind.Suffix; at.Key != want {
		return fmt.Errorf("verify %s: INVALID: %s lists it as the %s attestation of %s, which is %s", file, publish.KeyManifest, at.PredicateType, a.Key, t.name(want))
	}
	env, err := t.read(at.Key)
	if errors.Is(err, publish.ErrNotFound) {
		return fmt.Errorf("verify %s: INVALID: %s lists it (sha256 %s), the tree has no such object", file, publish.KeyManifest, at.SHA256)
	}
	if err != nil {
		return shell.Usagef("verify: %w", err)
	}
	sum := sha256.Sum256(env)
	if got := hex.EncodeToString(sum[:]); got != at.SHA256 {
		return fmt.Errorf("verify %s: INVALID: its sha256 is %s, %s lists %s: it was changed or swapped", file, got, publish.KeyManifest, at.SHA256)
	}
	if _, err := publish.VerifyAttestation(pub, env, a.FileName(), a.SHA256, at.PredicateType); err != nil {
		return fmt.Errorf("verify %s: INVALID: %w", file, err)
	}
	return nil
}

// attestationKind is the kind of attestation of a predicate type.
func attestationKind(predicateType string) (publish.AttestationKind, bool) {
	for _, k := range publish.AttestationKinds() {
		if k.PredicateType == predicateType {
			return k, true
		}
	}
	return publish.AttestationKind{}, false
}

// describe is what a verified statement says, in a few words.
func describe(st *publish.Statement) string {
	var p struct {
		BuildDefinition struct {
			ResolvedDependencies []struct {
				URI    string            `json:"uri"`
				Digest map[string]string `json:"digest"`
			} `json:"resolvedDependencies"`
		} `json:"buildDefinition"`
		RunDetails struct {
			Builder struct {
				ID string `json:"id"`
			} `json:"builder"`
		} `json:"runDetails"`
		Components []json.RawMessage `json:"components"`
	}
	if json.Unmarshal(st.Predicate, &p) != nil {
		return ""
	}
	var parts []string
	if id := p.RunDetails.Builder.ID; id != "" {
		parts = append(parts, "built by "+id)
	}
	for _, d := range p.BuildDefinition.ResolvedDependencies {
		src := []string{}
		if d.URI != "" {
			src = append(src, strings.TrimPrefix(d.URI, "git+"))
		}
		if cm := d.Digest["gitCommit"]; cm != "" {
			src = append(src, "commit "+cm)
		}
		parts = append(parts, "from "+strings.Join(src, " "))
	}
	if st.PredicateType == publish.PredicateCycloneDX {
		parts = append(parts, fmt.Sprintf("%d components", len(p.Components)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}

// verifyTreeImageAttestations checks the attestations releases.json lists
// for every image: each envelope is in the image's repository with its
// digest, is signed by pub and states its predicate type about each of
// its subjects, every subject is the image's index or one of its
// platforms' manifests, and the attestation manifest (sha256-HEX.att) of
// every digest holds exactly the envelopes listed about it, so a changed,
// swapped or added one is refused as cosign verify-attestation would
// refuse or show it. It returns how many of each kind it checked.
func verifyTreeImageAttestations(pub *ecdsa.PublicKey, t treeReader, m *publish.Manifest) (map[string]int, error) {
	n := map[string]int{}
	for _, rel := range m.Releases {
		for _, im := range rel.Images {
			if err := verifyImageAttestations(pub, t, im); err != nil {
				return n, err
			}
			for _, at := range im.Attestations {
				n[at.PredicateType]++
			}
		}
	}
	return n, nil
}

// verifyImageAttestations checks the attestations of one image.
func verifyImageAttestations(pub *ecdsa.PublicKey, t treeReader, im publish.Image) error {
	if len(im.Attestations) == 0 {
		return nil
	}
	digests := []string{im.Index}
	for _, p := range im.Platforms {
		digests = append(digests, p.Manifest)
	}
	want := map[string][]string{} // digest -> envelopes listed about it
	for _, at := range im.Attestations {
		if _, ok := attestationKind(at.PredicateType); !ok {
			return fmt.Errorf("verify %s: INVALID: %s lists an attestation of predicate type %q, which wharf does not attest", im.Ref(), publish.KeyManifest, at.PredicateType)
		}
		file := t.name(publish.RegistryBlobKey(im.Name, at.Envelope))
		if !oci.ValidDigest(at.Envelope) {
			return fmt.Errorf("verify %s: INVALID: %s lists the envelope %q", im.Ref(), publish.KeyManifest, at.Envelope)
		}
		env, err := t.read(publish.RegistryBlobKey(im.Name, at.Envelope))
		if errors.Is(err, publish.ErrNotFound) {
			return fmt.Errorf("verify %s: INVALID: %s lists it, the tree has no such object", file, publish.KeyManifest)
		}
		if err != nil {
			return shell.Usagef("verify: %w", err)
		}
		if got := oci.Digest(env); got != at.Envelope {
			return fmt.Errorf("verify %s: INVALID: its digest is %s: it was changed", file, got)
		}
		for _, d := range at.Subjects {
			if !slices.Contains(digests, d) {
				return fmt.Errorf("verify %s: INVALID: %s lists it about %s, which is not an index or a manifest of %s", file, publish.KeyManifest, d, im.Ref())
			}
			if _, err := publish.VerifyImageAttestation(pub, env, d, at.PredicateType); err != nil {
				return fmt.Errorf("verify %s: INVALID: as the attestation of %s@%s: %w", file, im.Name, d, err)
			}
			want[d] = append(want[d], at.Envelope)
		}
	}
	for _, d := range digests {
		key := publish.RegistryManifestKey(im.Name, oci.AttestationTag(d))
		b, err := t.read(key)
		if errors.Is(err, publish.ErrNotFound) && len(want[d]) == 0 {
			continue
		}
		if errors.Is(err, publish.ErrNotFound) {
			return fmt.Errorf("verify %s@%s: INVALID: %s lists %d attestations of it, the tree has no %s", im.Name, d, publish.KeyManifest, len(want[d]), t.name(key))
		}
		if err != nil {
			return shell.Usagef("verify: %w", err)
		}
		layers, err := oci.ParseAttestationManifest(b)
		if err != nil {
			return fmt.Errorf("verify %s: INVALID: %w", t.name(key), err)
		}
		var got []string
		for _, l := range layers {
			got = append(got, l.Digest)
		}
		if !slices.Equal(got, want[d]) {
			return fmt.Errorf("verify %s: INVALID: it holds the envelopes %v, %s lists %v about %s: it was changed or swapped", t.name(key), got, publish.KeyManifest, want[d], d)
		}
	}
	return nil
}
