package main

import (
	"crypto/ecdsa"
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
