package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/publish"
)

// treeFiles reads every file of a tree under bin/ and img/ but the
// attestations: the artifacts, signatures and checksums.
func treeFiles(t *testing.T, store string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, dir := range []string{"bin", "img"} {
		err := filepath.WalkDir(filepath.Join(store, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(path, ".intoto.jsonl") || strings.HasPrefix(d.Name(), ".") {
				return err
			}
			b, err := os.ReadFile(path)
			files[path] = b
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// TestAttestExisting: a version published before attestations gets them
// by publishing it again with the same inputs and the build's provenance:
// only the missing attestations are written and listed (its images' too),
// every artifact, signature and checksum keeps its bytes, an attestation
// written once is never replaced, and other bytes for the version are
// still refused.
func TestAttestExisting(t *testing.T) {
	dir := t.TempDir()
	key, store := filepath.Join(dir, "dl.key"), filepath.Join(dir, "public")
	mustRun(t, "keygen", "--out", key)
	args := []string{"publish", "--version", "26.1.1", "--key", key, "--store", store, "--base-url", "https://dl.example.com"}
	mustRun(t, append(args, demoInputDir(t, "old"))...)
	pub := filepath.Join(store, "dl.pub")
	if out := mustRun(t, "verify", "--key", pub, store); !strings.Contains(out, "0 provenance and 0 SBOM attestations OK") {
		t.Fatalf("a tree published without attestations: verify says\n%s", out)
	}
	before := treeFiles(t, store)

	out, log, err := pubRun(t, append(append(args, provenanceArgs("26.1.1")...), attestedInputDir(t, "old"))...)
	if err != nil || !strings.Contains(log, "26 attestations added") {
		t.Errorf("publish of the version again with provenance and SBOMs = %v, printed:\n%s%s", err, out, log)
	}
	if out := mustRun(t, "verify", "--key", pub, store); !strings.Contains(out, "22 provenance and 4 SBOM attestations OK") ||
		!strings.Contains(out, "2 provenance and 4 SBOM attestations of images OK") {
		t.Errorf("verify TREE after attesting says\n%s", out)
	}
	after := treeFiles(t, store)
	for path, b := range before {
		if !bytes.Equal(after[path], b) {
			t.Errorf("%s changed", path)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d files besides the attestations, %d before", len(after), len(before))
	}
	raw, _ := os.ReadFile(filepath.Join(store, publish.KeyManifest))
	m, err := publish.ReadManifest(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := m.Find("26.1.1")
	node, _ := rel.Image("treasury-node")
	attested := node.Attestations
	if len(attested) != 3 {
		t.Errorf("releases.json lists %d attestations of the image treasury-node, want its provenance and 2 SBOMs", len(attested))
	}
	if rel.Provenance == nil || rel.Provenance.Commit != strings.Repeat("c0ffee", 6)+"c0ff" {
		t.Errorf("releases.json: the release's provenance is %+v, want the commit attested", rel.Provenance)
	}
	index, _ := os.ReadFile(filepath.Join(store, publish.KeyIndex))
	if !strings.Contains(string(index), "c0ffeec0ffee") || !strings.Contains(string(index), ".sbom.intoto.jsonl") {
		t.Errorf("index.html shows no commit or no SBOM link after attesting")
	}

	t.Run("NeverReplaced", func(t *testing.T) {
		prov := filepath.Join(store, publish.ProvenanceKey("bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz"))
		was, _ := os.ReadFile(prov)
		other := append(append(args, "--builder-id", "https://ci.example.com/other", "--source-commit", strings.Repeat("ab", 20)), attestedInputDir(t, "old"))
		if _, log, err := pubRun(t, other...); err != nil || strings.Contains(log, "attestations added") {
			t.Errorf("a third publish = %v, printed:\n%s", err, log)
		}
		if now, _ := os.ReadFile(prov); !bytes.Equal(now, was) {
			t.Errorf("%s was rewritten", prov)
		}
		m, err := publish.ReadManifest(bytes.NewReader(readStoreFile(t, store, publish.KeyManifest)))
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := m.Find("26.1.1")
		if node, _ := rel.Image("treasury-node"); !reflect.DeepEqual(node.Attestations, attested) {
			t.Errorf("the image's attestations became %+v, were %+v", node.Attestations, attested)
		}
	})
	t.Run("ErrOtherBytes", func(t *testing.T) {
		_, _, err := pubRun(t, append(append(args, provenanceArgs("26.1.1")...), demoInputDir(t, "new"))...)
		if err == nil || !strings.Contains(err.Error(), "immutable") {
			t.Errorf("publish of other bytes for the version = %v, want refused as immutable", err)
		}
	})
}
