package publish_test

import (
	"context"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
)

// TestSignCosign: cosign (built from its own module, independent of our
// code) accepts our .sig files with dl.pub offline, as docs/design.md promises,
// and refuses a signature over other bytes.
func TestSignCosign(t *testing.T) {
	cosign := testenv.Tool(t, "cosign")
	s, pubPath := testSigner(t)
	dir := t.TempDir()
	content := []byte(strings.Repeat("treasury-cli 26.1.1\n", 1000))
	file := filepath.Join(dir, "treasury-cli-26.1.1-linux-amd64.tar.gz")
	if err := os.WriteFile(file, content, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	der, err := s.SignDigest(context.Background(), sum[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := file + ".sig"
	if err := os.WriteFile(sig, publish.SignatureText(der), 0o644); err != nil {
		t.Fatal(err)
	}
	verify := func(target string) ([]byte, error) {
		// The page's command (publish.CosignOffline).
		cmd := exec.Command(cosign, "verify-blob", "--key", pubPath, "--signature", sig, publish.CosignOffline, target)
		// Offline: no TUF root or Rekor lookups from this machine.
		cmd.Env = append(os.Environ(), "HOME="+dir, "TUF_ROOT="+filepath.Join(dir, "tuf"), "SIGSTORE_NO_CACHE=true")
		return cmd.CombinedOutput()
	}
	out, err := verify(file)
	if err != nil {
		t.Fatalf("cosign verify-blob refused our signature: %v\n%s", err, out)
	}
	// No warning but the one the page explains: the trusted root it could
	// not fetch (offline here), which --key does not use.
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "WARNING") && !strings.Contains(line, "Could not fetch trusted_root.json") {
			t.Errorf("cosign warns with the page's command: %s", line)
		}
	}
	if !strings.Contains(string(out), "Verified OK") {
		t.Errorf("cosign printed %s, want Verified OK", out)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, append(content, 'x'), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := verify(other); err == nil {
		t.Fatalf("cosign verify-blob accepted the signature for other bytes:\n%s", out)
	}

	// Through a real publish: a download's .sig verifies, and the
	// signature of a SHA256SUMS (metadata, in its context) does not pass
	// for the file it signs.
	root := t.TempDir()
	p := newPublisher(t, dirStore(t, root), s)
	mustPublish(t, p, "26.1.1", "cosign")
	run := func(sigFile, target string) ([]byte, error) {
		cmd := exec.Command(cosign, "verify-blob", "--key", pubPath, "--signature", sigFile, "--insecure-ignore-tlog=true", target)
		cmd.Env = append(os.Environ(), "HOME="+dir, "TUF_ROOT="+filepath.Join(dir, "tuf"), "SIGSTORE_NO_CACHE=true")
		return cmd.CombinedOutput()
	}
	archive := filepath.Join(root, "bin", "26.1.1", "treasury-cli-26.1.1-linux-amd64.tar.gz")
	if out, err := run(archive+".sig", archive); err != nil {
		t.Fatalf("cosign verify-blob refused a published download: %v\n%s", err, out)
	}
	sums := filepath.Join(root, "bin", "26.1.1", "SHA256SUMS")
	if out, err := run(sums+".sig", sums); err == nil {
		t.Fatalf("cosign verify-blob took the SHA256SUMS signature as one of the file:\n%s", out)
	}
}
