package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeListenTaken: with the port taken, serve --dev fails with the
// bind error alone, saying which flag and variable choose another (it
// was "dev chain: deploy token: ... context canceled" under make run).
func TestServeListenTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, cmd := range [][]string{
		{"serve", "--dev", "--db", filepath.Join(t.TempDir(), "addrd.db"), "--listen", ln.Addr().String()},
		{"receive", "--secret", "whsec_" + strings.Repeat("A", 43) + "=", "--listen", ln.Addr().String()},
	} {
		_, _, err := run(t, cmd...)
		want := "choose a free address with --listen ADDR or $ADDRD_"
		if err == nil || !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "dev chain") {
			t.Errorf("%s: err = %v, want the bind error and %q", cmd[0], err, want)
		}
	}
}
