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
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/publish"
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
