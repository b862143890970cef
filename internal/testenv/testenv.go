// Package testenv starts the real parts tests talk to: a throwaway
// PostgreSQL cluster, a MinIO server, free loopback ports, and finds tools
// such as openssl, dash and chromium.
//
// A missing part skips the test, except when WHARF_REQUIRE_ALL=1 (set in
// CI), where it fails it: CI never passes by skipping.
package testenv

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
)

// RequireAll reports whether missing parts must fail tests (WHARF_REQUIRE_ALL=1).
func RequireAll() bool { return os.Getenv("WHARF_REQUIRE_ALL") == "1" }

// Need skips tb when err is not nil, or fails it under WHARF_REQUIRE_ALL=1.
func Need(tb testing.TB, what string, err error) {
	tb.Helper()
	if err == nil {
		return
	}
	if RequireAll() {
		tb.Fatalf("%s is required (WHARF_REQUIRE_ALL=1): %v", what, err)
	}
	reportSkip(what, tb.Name())
	tb.Skipf("%s not available: %v", what, err)
}

// reportSkip appends "what<TAB>test" to the file named by
// WHARF_SKIP_REPORT, if set: make test sums the skips up at its end, with
// the Debian packages that would run them (scripts/skipped.sh). Test
// binaries of several packages append to it at once; a line is one
// write, so lines do not mix.
func reportSkip(what, test string) {
	path := os.Getenv("WHARF_SKIP_REPORT")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	f.WriteString(what + "\t" + test + "\n")
}

// Tool returns the path of an executable on PATH, or skips/fails as Need.
func Tool(tb testing.TB, name string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	Need(tb, name, err)
	return p
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// FreeAddr returns "127.0.0.1:PORT" for a free port.
func FreeAddr(tb testing.TB) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(tb)))
}

// stoppers are the shared services started by this test binary, stopped by Main.
var (
	mu       sync.Mutex
	stoppers []func()
)

func atExit(f func()) {
	mu.Lock()
	defer mu.Unlock()
	stoppers = append(stoppers, f)
}

// Main runs the tests of a package and then stops the shared services the
// tests started (PostgreSQL, MinIO). Call it from TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	for i := len(stoppers) - 1; i >= 0; i-- {
		stoppers[i]()
	}
	mu.Unlock()
	os.Exit(code)
}

var errNotFound = errors.New("not found")
