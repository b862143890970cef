package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
)

// TestRunScriptPortTaken: make run's script finds a taken port before it
// builds anything, and names the variable that chooses another.
func TestRunScriptPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := free.Addr().String()
	free.Close()
	for _, tt := range []struct{ env, want string }{
		{"WHARF_LISTEN", "WHARF_LISTEN=127.0.0.1:"},
		{"ADDRD_LISTEN", "ADDRD_LISTEN=127.0.0.1:"},
	} {
		cmd := exec.Command("../../scripts/run.sh")
		// MAKE=false: a build would fail the test rather than start.
		cmd.Env = append(os.Environ(), "MAKE=false", "WHARF_LISTEN="+freeAddr, "ADDRD_LISTEN="+freeAddr, tt.env+"="+ln.Addr().String())
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), ln.Addr().String()+" is taken") || !strings.Contains(string(out), tt.want) {
			t.Errorf("%s taken: %v\n%s\nwant %q", tt.env, err, out, tt.want)
		}
	}
}

// TestRunScriptAnnouncement: what run.sh itself prints does not match
// the lines a reader greps from addrd's output.
func TestRunScriptAnnouncement(t *testing.T) {
	b, err := os.ReadFile("../../scripts/run.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, grep := range []string{"dev api key", "dev account "} {
		if strings.Contains(string(b), grep) {
			t.Errorf("scripts/run.sh prints %q itself: grep '%s' finds run.sh's line too", grep, grep)
		}
	}
}

// TestMakeBuildFirstTime: make build says what the first build does before
// it starts and builds with -v (a line a package); once bin/ holds both
// binaries it says nothing and builds quietly. go is a stand-in that
// records its arguments.
func TestMakeBuildFirstTime(t *testing.T) {
	makeBin := testenv.Tool(t, "make")
	makefile, err := filepath.Abs("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	calls := filepath.Join(dir, "go-calls")
	fakeGo := filepath.Join(dir, "go")
	writeTestFile(t, fakeGo, []byte("#!/bin/sh\nif [ \"$1\" = env ]; then echo "+dir+"; exit 0; fi\necho \"$*\" >> "+calls+"\n"))
	if err := os.Chmod(fakeGo, 0o755); err != nil {
		t.Fatal(err)
	}
	build := func() (string, string) {
		t.Helper()
		os.Remove(calls)
		cmd := exec.Command(makeBin, "-s", "-f", makefile, "build", "GO="+fakeGo)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make build: %v\n%s", err, out)
		}
		args, _ := os.ReadFile(calls)
		return string(out), string(args)
	}
	out, args := build()
	if !strings.Contains(out, "the first build of bin/wharf and bin/addrd downloads about 250 MB") || !strings.Contains(out, "5 to 30 minutes") || !strings.HasPrefix(args, "build -v ") {
		t.Errorf("first make build printed %q and ran go %q; want the announcement and go build -v", out, args)
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"wharf", "addrd"} {
		writeTestFile(t, filepath.Join(dir, "bin", b), nil)
		if err := os.Chmod(filepath.Join(dir, "bin", b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out, args = build()
	if out != "" || strings.Contains(args, "-v") || !strings.HasPrefix(args, "build ") {
		t.Errorf("make build with both built printed %q and ran go %q; want nothing and a quiet go build", out, args)
	}
}
