//go:build !kms

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/shell"
)

// TestPublishKMSNotBuilt: a wharf built without -tags kms refuses a KMS
// URI for --key before it reads or writes anything, saying how to get a
// wharf that takes it (exit 2), instead of sigstore's "no provider".
func TestPublishKMSNotBuilt(t *testing.T) {
	for _, key := range []string{"awskms:///alias/wharf", "gcpkms://projects/p/locations/l/keyRings/r/cryptoKeys/k", "azurekms://vault.vault.azure.net/wharf", "hashivault://wharf"} {
		t.Run(strings.SplitN(key, ":", 2)[0], func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "public")
			_, _, err := pubRun(t, "publish", "--version", "26.1.1", "--key", key, "--store", store,
				"--base-url", "http://127.0.0.1:8080", t.TempDir())
			if err == nil || !strings.Contains(err.Error(), "built without the cloud KMS providers") ||
				!strings.Contains(err.Error(), "make build TAGS=kms") || !strings.Contains(err.Error(), "-tags kms") {
				t.Fatalf("publish --key %s = %v, want the error naming how to build with KMS", key, err)
			}
			if code := shell.ExitCode(err); code != shell.ExitUsage {
				t.Errorf("exit code %d, want %d", code, shell.ExitUsage)
			}
			if _, err := os.Stat(store); !os.IsNotExist(err) {
				t.Errorf("the refused publish made the store (%v)", err)
			}
		})
	}
}
