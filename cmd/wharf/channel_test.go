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

	tampered := []struct{ name, file, from, to string }{
		{"ChannelEdited", "channel", "latest 26.1.1", "latest 26.1.2"},
		{"ManifestEdited", "releases.json", `"26.1.1"`, `"26.1.9"`},
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
