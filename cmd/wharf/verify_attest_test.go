package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/shell"
)

// TestVerifyAttestations: wharf verify checks a published download's
// signature and provenance in one command, offline, and refuses a changed
// envelope, another file's statement and another key's, saying why.
func TestVerifyAttestations(t *testing.T) {
	input := demoInputDir(t, "attest")
	dir := t.TempDir()
	key, store := filepath.Join(dir, "dl.key"), filepath.Join(dir, "public")
	mustRun(t, "keygen", "--out", key)
	commit := strings.Repeat("c0ffee", 6) + "c0ff"
	mustRun(t, "publish", "--version", "26.1.1", "--key", key, "--store", store, "--base-url", "https://dl.example.com",
		"--builder-id", "https://ci.example.com/release", "--source-repo", "https://git.example.com/treasury",
		"--source-commit", commit, "--source-ref", "refs/tags/v26.1.1", input)
	pub := filepath.Join(store, "dl.pub")
	file := filepath.Join(store, "bin/26.1.1/treasury-cli-26.1.1-linux-amd64.tar.gz")
	other := filepath.Join(store, "bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz")
	out := mustRun(t, "verify", "--key", pub, file)
	for _, want := range []string{"signature OK", "provenance OK", "built by https://ci.example.com/release", "from https://git.example.com/treasury@refs/tags/v26.1.1 commit " + commit} {
		if !strings.Contains(out, want) {
			t.Errorf("verify says\n%s\nwant %q", out, want)
		}
	}

	mustRun(t, "keygen", "--out", filepath.Join(dir, "o.key"))
	genuine, _ := os.ReadFile(file + ".provenance.intoto.jsonl")
	otherAtt, _ := os.ReadFile(other + ".provenance.intoto.jsonl")
	for _, tc := range []struct {
		name string
		att  []byte
		want string
	}{
		{"Tampered", bytes.Replace(genuine, []byte(`"payload":"`), []byte(`"payload":"AAAA`), 1), "no signature of the envelope verifies"},
		{"OtherFile", otherAtt, "the statement is about [engine-26.1.1-linux-amd64.tar.gz"},
		{"NotAnEnvelope", []byte("{}\n"), "payload type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(file+".provenance.intoto.jsonl", tc.att, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.WriteFile(file+".provenance.intoto.jsonl", genuine, 0o644) })
			out, _, err := pubRun(t, "verify", "--key", pub, file)
			if err == nil || shell.ExitCode(err) != 1 || !strings.Contains(err.Error(), "INVALID: provenance") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("verify = %v (exit %d)\n%s\nwant exit 1 saying %q", err, shell.ExitCode(err), out, tc.want)
			}
		})
	}
	t.Run("OtherKey", func(t *testing.T) {
		// The artifact signed by the release key, the provenance beside
		// it re-signed by another: the signature check passes, this fails.
		otherStore := filepath.Join(dir, "other")
		mustRun(t, "publish", "--version", "26.1.1", "--key", filepath.Join(dir, "o.key"), "--store", otherStore, "--base-url", "https://dl.example.com",
			"--builder-id", "https://evil.example.com", input)
		b, _ := os.ReadFile(filepath.Join(otherStore, "bin/26.1.1/treasury-cli-26.1.1-linux-amd64.tar.gz.provenance.intoto.jsonl"))
		os.WriteFile(file+".provenance.intoto.jsonl", b, 0o644)
		t.Cleanup(func() { os.WriteFile(file+".provenance.intoto.jsonl", genuine, 0o644) })
		_, _, err := pubRun(t, "verify", "--key", pub, file)
		if err == nil || !strings.Contains(err.Error(), "another key") {
			t.Fatalf("verify = %v, want the other key's provenance refused", err)
		}
	})
}

// TestCheckProvenance: wharf check and publish refuse provenance fields a
// statement cannot carry, and publish writes nothing then.
func TestCheckProvenance(t *testing.T) {
	input := demoInputDir(t, "check-prov")
	dir := t.TempDir()
	key, store := filepath.Join(dir, "dl.key"), filepath.Join(dir, "public")
	mustRun(t, "keygen", "--out", key)
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"ControlCharacter", []string{"--builder-id", "https://ci.example.com", "--source-ref", "refs/tags/v1\x1b[2K"}, "source ref"},
		{"Oversized", []string{"--builder-id", "https://ci.example.com/" + strings.Repeat("x", 1100)}, "at most 1024"},
		{"CommitNotHex", []string{"--builder-id", "https://ci.example.com", "--source-commit", "HEAD"}, "source commit"},
		{"NoBuilder", []string{"--source-repo", "https://git.example.com/treasury"}, "--builder-id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := pubRun(t, append(append([]string{"check"}, tc.flags...), input)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("check = %v, want a problem naming %q", err, tc.want)
			}
			args := append([]string{"publish", "--version", "26.1.1", "--key", key, "--store", store, "--base-url", "https://dl.example.com"}, tc.flags...)
			_, _, err = pubRun(t, append(args, input)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("publish = %v, want a refusal naming %q", err, tc.want)
			}
			if _, err := os.Stat(store); !os.IsNotExist(err) {
				t.Errorf("publish refused but created %s (%v)", store, err)
			}
		})
	}
}
