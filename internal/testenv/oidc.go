package testenv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// OIDCIssuer is an OpenID Connect issuer running as a process of its own
// (internal/testenv/oidcissuer): discovery, key set, and tokens minted on
// request with keys the test never holds. It is stopped at cleanup.
type OIDCIssuer struct {
	URL string
}

// GoBinary builds a main package of this module (an import path) once per
// test binary and returns the executable's path.
func GoBinary(tb testing.TB, pkg string) string {
	tb.Helper()
	goTool := Tool(tb, "go")
	goBuilt.mu.Lock()
	defer goBuilt.mu.Unlock()
	if p, ok := goBuilt.bins[pkg]; ok {
		return p
	}
	if goBuilt.dir == "" {
		dir, err := os.MkdirTemp("", "wharf-testbin-")
		if err != nil {
			tb.Fatal(err)
		}
		goBuilt.dir = dir
		atExit(func() { os.RemoveAll(dir) })
	}
	out := filepath.Join(goBuilt.dir, filepath.Base(pkg))
	if b, err := exec.Command(goTool, "build", "-o", out, pkg).CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	if goBuilt.bins == nil {
		goBuilt.bins = map[string]string{}
	}
	goBuilt.bins[pkg] = out
	return out
}

var goBuilt struct {
	mu   sync.Mutex
	dir  string
	bins map[string]string
}

// NewOIDCIssuer starts an issuer process on loopback.
func NewOIDCIssuer(tb testing.TB) *OIDCIssuer {
	tb.Helper()
	bin := GoBinary(tb, "github.com/wharfhq/wharf/internal/testenv/oidcissuer")
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe() // closed at cleanup: the issuer exits
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start oidcissuer: %v", err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "url ")
	if err != nil || !ok {
		tb.Fatalf("oidcissuer said %q: %v", line, err)
	}
	return &OIDCIssuer{URL: url}
}

// Mint asks the issuer for a token signed with its key kid ("r1" RSA
// RS256, "e1" EC ES256) under alg, with extra header fields and claims.
func (is *OIDCIssuer) Mint(tb testing.TB, alg, kid string, header, claims map[string]any) string {
	tb.Helper()
	body, err := json.Marshal(map[string]any{"alg": alg, "kid": kid, "header": header, "claims": claims})
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := http.Post(is.URL+"/mint", "application/json", bytes.NewReader(body))
	if err != nil {
		tb.Fatalf("mint: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("mint: %s: %s", resp.Status, b)
	}
	return string(b)
}

// KeyFetches is how many times the issuer's key set was fetched.
func (is *OIDCIssuer) KeyFetches(tb testing.TB) int {
	tb.Helper()
	resp, err := http.Get(is.URL + "/hits")
	if err != nil {
		tb.Fatalf("hits: %v", err)
	}
	defer resp.Body.Close()
	var n int
	if _, err := fmt.Fscan(resp.Body, &n); err != nil {
		tb.Fatalf("hits: %v", err)
	}
	return n
}

// HoldKeys makes the issuer slow: fetches of its key set wait, without an
// answer, until ReleaseKeys.
func (is *OIDCIssuer) HoldKeys(tb testing.TB) { is.post(tb, "/hold") }

// ReleaseKeys lets the fetches HoldKeys holds be answered, and the next
// ones at once.
func (is *OIDCIssuer) ReleaseKeys(tb testing.TB) { is.post(tb, "/release") }

// WaitKeysHeld returns once a fetch of the key set is being held (one
// per call).
func (is *OIDCIssuer) WaitKeysHeld(tb testing.TB) {
	tb.Helper()
	resp, err := http.Get(is.URL + "/held")
	if err != nil {
		tb.Fatalf("held: %v", err)
	}
	resp.Body.Close()
}

func (is *OIDCIssuer) post(tb testing.TB, path string) {
	tb.Helper()
	resp, err := http.Post(is.URL+path, "text/plain", nil)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("%s: %s", path, resp.Status)
	}
}
