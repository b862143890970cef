package main

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeListenTaken: with the port taken, serve says which flag and
// variable choose another, and creates no database.
func TestServeListenTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	db := filepath.Join(dir, "wharf.db")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", ln.Addr().String()}, "choose a free address with --listen ADDR or $WHARF_LISTEN"},
		{[]string{"--listen", "127.0.0.1:0", "--metrics-listen", ln.Addr().String()}, "choose a free address with --metrics-listen ADDR or $WHARF_METRICS_LISTEN"},
	} {
		_, _, err := pubRun(t, append([]string{"serve", "--store", dir, "--db", db}, tt.args...)...)
		if err == nil || !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("serve %s: err = %v, want %q", strings.Join(tt.args, " "), err, tt.want)
		}
		if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("serve %s: %s exists (%v): created before the port was found taken", strings.Join(tt.args, " "), db, err)
		}
	}
}
