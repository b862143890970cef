package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
)

// serveAttested publishes version of attestedInputDir(label) with
// provenance into dir/public, signed by a new dir/dl.key, creates a full
// organisation's API key in dir/wharf.db and serves the tree on a free
// port: it returns the tree, the key and the address.
func serveAttested(t *testing.T, dir, version, label string) (store, apiKey, addr string) {
	t.Helper()
	key, store, db := filepath.Join(dir, "dl.key"), filepath.Join(dir, "public"), filepath.Join(dir, "wharf.db")
	mustRun(t, "keygen", "--out", key)
	mustRun(t, append(append([]string{"publish", "--version", version, "--key", key, "--store", store, "--base-url", "https://dl.example.com"},
		provenanceArgs(version)...), attestedInputDir(t, label))...)
	mustRun(t, "org", "create", "globex", "--level", "full", "--db", db)
	apiKey = lastLine(mustRun(t, "apikey", "create", "--org", "globex", "--db", db))
	addr = testenv.FreeAddr(t)
	startServe(t, "--store", store, "--listen", addr, "--db", db, "--log-level", "error")
	return store, apiKey, addr
}

// TestDocsAuditor runs docs/publish.md's "Auditing a release" block as
// printed, in bash with set -euo pipefail, against wharf serve over a
// tree published with provenance and SBOMs: its first line's server,
// version and API key replaced by the test's, the wharf built from this
// tree and cosign on PATH, the network unused; the image's attestations
// through serve's /v2/ with the key.
func TestDocsAuditor(t *testing.T) {
	bash := testenv.Tool(t, "bash")
	cosign := testenv.Tool(t, "cosign")
	testenv.Tool(t, "jq")
	testenv.Tool(t, "curl")
	doc, err := os.ReadFile("../../docs/publish.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "\n## Auditing a release\n")
	if !ok {
		t.Fatal("docs/publish.md has no section Auditing a release")
	}
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(sec)
	if m == nil {
		t.Fatal("Auditing a release has no sh block")
	}
	block := m[1]
	first := "base=https://dl.example.com v=26.1.2 key=API_KEY\n"
	if !strings.HasPrefix(block, first) {
		t.Fatalf("the block does not start with %q:\n%s", first, block)
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "wharf"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	store, apiKey, addr := serveAttested(t, dir, "26.1.2", "docs")

	work := t.TempDir()
	pub, err := os.ReadFile(filepath.Join(store, "dl.pub"))
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(work, "dl.pub"), pub) // handed over out of band
	script := "set -euo pipefail\nbase=http://" + addr + " v=26.1.2 key=" + apiKey + "\n" + strings.TrimPrefix(block, first)
	cmd := exec.Command(bash, "-c", script)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "HOME="+work, "PATH="+bin+":"+filepath.Dir(cosign)+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the auditor's block: %v\n%s", err, out)
	}
	for _, want := range []string{"signature OK", "provenance OK", "SBOM OK", "Verified OK", strings.Repeat("c0ffee", 6) + "c0ff\n", "openssl\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the auditor's block printed\n%s\nwant %q", out, want)
		}
	}
	if n := strings.Count(string(out), "Verified OK"); n != 2 {
		t.Errorf("cosign verified %d attestations, want 2:\n%s", n, out)
	}
	// The image by digest: its provenance, and the SBOM of each platform.
	if n, m := strings.Count(string(out), "https://slsa.dev/provenance/v1\n"), strings.Count(string(out), "https://cyclonedx.org/bom\n"); n != 1 || m != 2 {
		t.Errorf("cosign verify-attestation printed %d provenance and %d SBOM statements of the image, want 1 and 2:\n%s", n, m, out)
	}
}
