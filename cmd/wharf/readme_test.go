package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
)

// readmeBlocks returns the fenced sh blocks of the README's section titled
// title, in order.
func readmeBlocks(t *testing.T, readme, title string) []string {
	t.Helper()
	_, sec, ok := strings.Cut(readme, "\n## "+title+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", title)
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(sec, -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// TestREADMEWalkthrough runs the README's "wharf in five minutes" as
// printed: its first block (what make run does) in a fresh directory with
// the wharf built from this tree on PATH instead of make build, its
// wharf serve line as a process of its own on a free loopback port
// instead of 8080, then its second block (the customer) in bash with
// set -euo pipefail and a HOME of its own, so the install script installs
// into $HOME/.local/bin. Every command must succeed and leave what its
// comment says: the version, the downloads under their canonical names,
// "Verified OK", the installed executables. Nothing leaves loopback.
func TestREADMEWalkthrough(t *testing.T) {
	bash := testenv.Tool(t, "bash")
	for _, tool := range []string{"curl", "openssl", "tar", "base64", "sh"} {
		testenv.Tool(t, tool)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(t, string(readme), "wharf in five minutes")
	if len(blocks) != 2 {
		t.Fatalf("the section has %d sh blocks, want 2 (the publisher's, the customer's)", len(blocks))
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Dir(testenv.GoBinary(t, "github.com/wharfhq/wharf/cmd/wharf"))
	work, home := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".local", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	addr := testenv.FreeAddr(t)
	// The README's commands, with the repository's files where it says
	// ./scripts and the free port where it says 8080.
	adapt := func(block string) string {
		block = strings.ReplaceAll(block, "127.0.0.1:8080", addr)
		block = strings.ReplaceAll(block, "./scripts/", repo+"/scripts/")
		return strings.ReplaceAll(block, " scripts/", " "+repo+"/scripts/")
	}
	env := append(os.Environ(), "HOME="+home, "PATH="+filepath.Join(home, ".local", "bin")+":"+bin+":"+os.Getenv("PATH"))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	runBlock := func(name, script string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, bash, "-c", "set -euo pipefail\n"+script)
		cmd.Dir, cmd.Env = work, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the README's %s block: %v\n--- script\n%s\n--- output\n%s", name, err, script, out)
		}
		return string(out)
	}

	// The publisher: make build is the binary built above; wharf serve
	// runs beside the test.
	var script, serveLine []string
	for _, line := range strings.Split(adapt(blocks[0]), "\n") {
		switch {
		case strings.HasPrefix(line, "make build"):
			if line != "make build && export PATH=$PWD/bin:$PATH" {
				t.Fatalf("the first line changed: %q; teach the test its equivalent", line)
			}
		case strings.HasPrefix(line, "wharf serve "):
			serveLine = strings.Fields(strings.TrimSpace(strings.SplitN(line, "#", 2)[0]))
		default:
			script = append(script, line)
		}
	}
	if serveLine == nil {
		t.Fatal("the first block has no wharf serve line")
	}
	out := runBlock("first", strings.Join(script, "\n"))
	for _, want := range []string{"ok: 22 files for 8 artifacts", "published 26.1.1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the first block's output lacks %q:\n%s", want, out)
		}
	}
	serve := exec.Command(filepath.Join(bin, "wharf"), serveLine[1:]...)
	stdout := &notifyWriter{mark: "serving", ready: make(chan struct{})}
	var stderr bytes.Buffer
	serve.Dir, serve.Env, serve.Stdout, serve.Stderr = work, env, stdout, &stderr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	t.Cleanup(func() {
		serve.Process.Signal(os.Interrupt)
		<-exited
	})
	select {
	case <-stdout.ready:
	case err := <-exited:
		t.Fatalf("%s: %v\n%s", strings.Join(serveLine, " "), err, stderr.String())
	case <-ctx.Done():
		t.Fatalf("%s did not say it was serving", strings.Join(serveLine, " "))
	}

	// The customer.
	out = runBlock("second", adapt(blocks[1]))
	for _, want := range []string{"26.1.1\n", "Verified OK", "installed treasury from treasury-cli-26.1.1-", "installed engine from engine-26.1.1-"} {
		if !strings.Contains(out, want) {
			t.Errorf("the second block's output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{
		filepath.Join(work, "treasury-cli-26.1.1-linux-amd64.tar.gz"),
		filepath.Join(work, "engine-26.1.1-linux-amd64.tar.gz"),
		filepath.Join(work, "engine-26.1.1-linux-arm64.tar.gz"),
		filepath.Join(home, ".local", "bin", "treasury"),
		filepath.Join(home, ".local", "bin", "engine"),
	} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("after the walk-through: %v", err)
		}
	}
}
