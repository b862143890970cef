package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/dir"
)

// TestChannelCommands: publish writes the signed channel record with its
// expiry, wharf verify checks it and the tree, channel resign pushes the
// expiry and the sequence, and a tampered record or manifest is refused
// with exit status 1.
func TestChannelCommands(t *testing.T) {
	tmp := t.TempDir()
	key := filepath.Join(tmp, "dl.key")
	mustRun(t, "keygen", "--out", key)
	pub := filepath.Join(tmp, "dl.pub")
	store := filepath.Join(tmp, "public")
	mustRun(t, "publish", "--version", "26.1.1", "--key", key, "--store", store,
		"--base-url", "http://127.0.0.1:8080", "--channel-expiry", "2h", demoInputDir(t, "chan"))

	out := mustRun(t, "verify", "--key", pub, store)
	if !regexp.MustCompile(`channel record OK .*sequence 1, latest 26\.1\.1, preview \(none\), issued \S+, expires \S+, for http://127\.0\.0\.1:8080`).MatchString(out) ||
		!strings.Contains(out, "releases.json: signature OK (1 releases)") {
		t.Errorf("verify TREE printed:\n%s", out)
	}
	out = mustRun(t, "channel", "resign", "--key", key, "--store", store, "--expiry", "168h")
	if !strings.Contains(out, "channel: sequence 2, latest 26.1.1, preview (none)") {
		t.Errorf("resign printed %q", out)
	}
	if out := mustRun(t, "verify", "--key", pub, filepath.Join(store, "channel")); !strings.Contains(out, "sequence 2") {
		t.Errorf("verify CHANNEL printed %q", out)
	}

	// SHA256SUMS and releases.json by hand: their signatures name the
	// URL they are published at.
	sums := filepath.Join(store, "bin", "26.1.1", "SHA256SUMS")
	if out := mustRun(t, "verify", "--key", pub, "--url", "http://127.0.0.1:8080/bin/26.1.1/SHA256SUMS", sums); !strings.Contains(out, "signature OK as the sha256sums at http://127.0.0.1:8080/bin/26.1.1/SHA256SUMS") {
		t.Errorf("verify SHA256SUMS printed %q", out)
	}
	mustRun(t, "verify", "--key", pub, "--url", "http://127.0.0.1:8080/releases.json", filepath.Join(store, "releases.json"))
	metadata := []struct {
		name string
		args []string
		want string
		code int
	}{
		{"ErrSumsNoURL", []string{sums}, "give it with --url", 2},
		{"ErrSumsOtherTree", []string{"--url", "https://staging.example.com/bin/26.1.1/SHA256SUMS", sums}, "INVALID", 1},
		{"ErrSumsOtherVersion", []string{"--url", "http://127.0.0.1:8080/bin/26.1.2/SHA256SUMS", sums}, "INVALID", 1},
		{"ErrSumsAsManifest", []string{"--url", "http://127.0.0.1:8080/releases.json", sums, sums + ".sig"}, "INVALID", 1},
		// The bytes a SHA256SUMS signature covers, presented as a
		// download with that signature.
		{"ErrContextAsDownload", []string{contextFile(t, "sha256sums", "http://127.0.0.1:8080/bin/26.1.1/SHA256SUMS", sums), sums + ".sig"}, "starts as the context wharf signs metadata in", 1},
	}
	for _, tt := range metadata {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := pubRun(t, append([]string{"verify", "--key", pub}, tt.args...)...)
			if err == nil || shell.ExitCode(err) != tt.code || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("verify %v: %v (exit %d), want %q, exit %d", tt.args, err, shell.ExitCode(err), tt.want, tt.code)
			}
		})
	}

	tampered := []struct{ name, file, from, to string }{
		{"ChannelEdited", "channel", "latest 26.1.1", "latest 26.1.2"},
		{"ManifestEdited", "releases.json", `"26.1.1"`, `"26.1.9"`},
		{"SumsEdited", "bin/26.1.1/SHA256SUMS", "  ", " *"},
	}
	for _, tt := range tampered {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(store, tt.file)
			orig, _ := os.ReadFile(p)
			t.Cleanup(func() { os.WriteFile(p, orig, 0o644) })
			os.WriteFile(p, []byte(strings.Replace(string(orig), tt.from, tt.to, 1)), 0o644)
			_, _, err := pubRun(t, "verify", "--key", pub, store)
			if err == nil || shell.ExitCode(err) != 1 || !strings.Contains(err.Error(), "INVALID") {
				t.Errorf("verify of a tree with %s edited: %v (exit %d), want INVALID, exit 1", tt.file, err, shell.ExitCode(err))
			}
		})
	}
	t.Run("ErrExpired", func(t *testing.T) {
		if _, _, err := pubRun(t, "channel", "resign", "--key", key, "--store", store, "--expiry", "1s"); shell.ExitCode(err) != 2 {
			t.Errorf("resign --expiry 1s: %v, want a usage error (under a minute)", err)
		}
		ctx := context.Background()
		signer, err := publish.LoadSigner(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		st, err := dir.New(store)
		if err != nil {
			t.Fatal(err)
		}
		past := func() time.Time { return time.Now().Add(-3 * time.Hour) }
		u := &publish.ChannelUpdate{Store: st, Signer: signer, Expiry: time.Hour, Force: true, Now: past}
		if _, _, err := u.Run(ctx); err != nil {
			t.Fatal(err)
		}
		_, _, err = pubRun(t, "verify", "--key", pub, filepath.Join(store, "channel"))
		if err == nil || shell.ExitCode(err) != 1 || !strings.Contains(err.Error(), "expired") {
			t.Errorf("verify of an expired record: %v, want expired, exit 1", err)
		}
	})
	t.Run("ErrResignNoTree", func(t *testing.T) {
		if _, _, err := pubRun(t, "channel", "resign", "--key", key, "--store", t.TempDir(), "--expiry", "1h"); err == nil {
			t.Error("resign of an empty store succeeded")
		}
	})
}

// contextFile writes the bytes a metadata signature of the file at src
// covers (its context), as an attacker's download would hold them.
func contextFile(t *testing.T, kind, url, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "treasury-cli-26.1.1-linux-amd64.tar.gz")
	if err := os.WriteFile(p, publish.SignContext(publish.PayloadType(kind, url), b), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
