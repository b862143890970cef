package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestInitCheck is the goreleaser-like start of docs/publish.md: wharf init
// writes a config for a build's output that wharf check then accepts; a
// broken output is refused with every problem listed, exit 1; init does
// not overwrite a config without --force.
func TestInitCheck(t *testing.T) {
	input := demoInputDir(t, "init")
	cfg := filepath.Join(t.TempDir(), "wharf.toml")
	out := mustRun(t, "init", "--out", cfg, input)
	if !strings.Contains(out, "wrote "+cfg+": 8 artifacts") {
		t.Errorf("init printed %q", out)
	}
	body, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Each [[artifact]] is one binary or image:", `name = "treasury-cli"` + "\n" + `kind = "binary"` + "\n" + `executable = "treasury"` + "\n" + `access = "public"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("wharf.toml lacks %q:\n%s", want, body)
		}
	}
	if out := mustRun(t, "check", "--config", cfg, input); !strings.Contains(out, "ok: 22 files for 8 artifacts") {
		t.Errorf("check printed %q", out)
	}
	if _, _, err := pubRun(t, "init", "--out", cfg, input); err == nil || !strings.Contains(err.Error(), "exists; --force overwrites it") {
		t.Errorf("init over an existing config = %v", err)
	}
	if out := mustRun(t, "init", "--out", "-"); !strings.Contains(out, "from the built-in list") || !strings.Contains(out, `name = "treasury-node"`) {
		t.Errorf("init without INPUT_DIR printed:\n%s", out)
	}

	// Break the output three ways: every problem is listed, exit 1.
	if err := os.Remove(filepath.Join(input, "engine-macos-arm64")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(input, "engine-linux-arm64"), []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x3e\x00"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(input, "engine-win-amd64"), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, _, err = pubRun(t, "check", "--config", cfg, input)
	var ec cli.ExitCoder
	if err == nil || errors.As(err, &ec) {
		t.Fatalf("check of a broken output = %v, want a plain failure (exit 1)", err)
	}
	for _, want := range []string{"3 problems", "engine-linux-arm64: an ELF for x86-64, published for linux/arm64", "engine-win-amd64: matches no configured artifact", "missing: engine for mac"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("check error lacks %q:\n%v", want, err)
		}
	}
}

// TestCheckEveryProblem: a config with a typo and a bad value, and an
// input with a file problem: check lists all of them at once (it stopped
// at the config's first).
func TestCheckEveryProblem(t *testing.T) {
	input := demoInputDir(t, "every")
	cfg := filepath.Join(t.TempDir(), "wharf.toml")
	mustRun(t, "init", "--out", cfg, input)
	body, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(strings.ReplaceAll(string(body), "access =", "acces ="), `name = "cord"`+"\n"+`kind = "binary"`, `name = "cord"`+"\n"+`kind = "library"`, 1)
	if err := os.WriteFile(cfg, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(input, "engine-win-amd64"), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, _, err = pubRun(t, "check", "--config", cfg, input)
	if err == nil {
		t.Fatal("check of a broken config and output succeeded")
	}
	for _, want := range []string{"config " + cfg + ": unknown key artifact.acces on lines ", "(did you mean artifact.access?)", `config ` + cfg + `: artifact cord: kind "library"`, "engine-win-amd64: matches no configured artifact"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("check error lacks %q:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "acces "); n != 1 {
		t.Errorf("the unknown key is reported %d times, want once:\n%v", n, err)
	}
}
