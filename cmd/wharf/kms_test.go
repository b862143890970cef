//go:build kms

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
)

// TestPublishKMSBuilt: a wharf built with -tags kms hands a KMS URI to its
// provider: the publish fails at the connection to a closed loopback port
// (no KMS is reachable from a test), not at a missing provider.
func TestPublishKMSBuilt(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "dl.key")
	if _, _, err := pubRun(t, "keygen", "--out", key); err != nil {
		t.Fatal(err)
	}
	input := demoInputDir(t, "kms")
	addr := testenv.FreeAddr(t)
	t.Setenv("VAULT_ADDR", "http://"+addr)
	t.Setenv("VAULT_TOKEN", "test")
	_, _, err := pubRun(t, "publish", "--version", "26.1.1", "--key", "hashivault://wharf",
		"--store", filepath.Join(dir, "public"), "--base-url", "http://127.0.0.1:8080", input)
	if err == nil {
		t.Fatal("publish reached a Vault on a closed port")
	}
	if strings.Contains(err.Error(), "built without") || strings.Contains(err.Error(), "no KMS provider") {
		t.Fatalf("publish did not hand the URI to the Vault provider: %v", err)
	}
	if !strings.Contains(err.Error(), addr) && !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("publish failed elsewhere than at the Vault connection: %v", err)
	}
}
