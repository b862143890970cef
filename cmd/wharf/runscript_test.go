package main

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
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
