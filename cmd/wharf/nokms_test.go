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
	keys := []string{"awskms:///alias/wharf", "gcpkms://projects/p/locations/l/keyRings/r/cryptoKeys/k", "azurekms://vault.vault.azure.net/wharf", "hashivault://wharf"}
	for _, key := range keys {
		for _, cmd := range []struct {
			name string
			args func(store string) []string
		}{
			{"publish", func(store string) []string {
				return []string{"publish", "--version", "26.1.1", "--key", key, "--store", store, "--base-url", "http://127.0.0.1:8080", t.TempDir()}
			}},
			{"channel resign", func(store string) []string {
				return []string{"channel", "resign", "--key", key, "--store", store, "--expiry", "168h"}
			}},
		} {
			t.Run(strings.SplitN(key, ":", 2)[0]+"/"+cmd.name, func(t *testing.T) {
				store := filepath.Join(t.TempDir(), "public")
				_, _, err := pubRun(t, cmd.args(store)...)
				if err == nil || !strings.HasPrefix(err.Error(), cmd.name+": --key") ||
					!strings.Contains(err.Error(), "built without the cloud KMS providers") ||
					!strings.Contains(err.Error(), "make build TAGS=kms") || !strings.Contains(err.Error(), "-tags kms") {
					t.Fatalf("%s --key %s = %v, want the error naming how to build with KMS", cmd.name, key, err)
				}
				if code := shell.ExitCode(err); code != shell.ExitUsage {
					t.Errorf("exit code %d, want %d", code, shell.ExitUsage)
				}
				if _, err := os.Stat(store); !os.IsNotExist(err) {
					t.Errorf("the refused command made the store (%v)", err)
				}
			})
		}
	}
}
