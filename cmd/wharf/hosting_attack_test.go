package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/site"
)

// startProxy renders `wharf hosting PROXY` for e and runs it with the real
// nginx or Caddy on loopback.
func startProxy(t *testing.T, e *hostingEnv, proxy string, extra ...string) *testenv.Proxy {
	t.Helper()
	addr := testenv.FreeAddr(t)
	args := []string{"hosting", proxy, "--root", e.store, "--upstream", e.wharf, "--listen", addr}
	if proxy == "nginx" {
		args = append(args, "--server-name", "dl.example.com", "--cache-dir", filepath.Join(t.TempDir(), "cache"), "--auth-cache", filepath.Join(t.TempDir(), "auth"),
			"--access-log", filepath.Join(t.TempDir(), "access.log"))
	}
	conf := mustRun(t, append(args, extra...)...)
	if proxy == "nginx" {
		return testenv.NewNginx(t, addr, conf)
	}
	return testenv.NewCaddy(t, addr, conf)
}

// TestHostingAttacks are the known attacks against the real nginx
// and Caddy: none may hand an anonymous client a byte of a basic archive.
// H1: a client's own X-Original-URI / X-Forwarded-Uri naming something
// public; H2: an encoded '?' that a rewrite decodes into a query.
func TestHostingAttacks(t *testing.T) {
	e := newHostingEnv(t)
	engine := "/bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz"
	secret, err := os.ReadFile(filepath.Join(e.store, engine))
	if err != nil {
		t.Fatal(err)
	}
	public := "/bin/26.1.1/treasury-cli-26.1.1-linux-amd64.tar.gz"
	for _, proxy := range []string{"nginx", "caddy"} {
		t.Run(proxy, func(t *testing.T) {
			p := startProxy(t, e, proxy)
			url := p.URL()
			for _, tt := range []struct {
				name string
				path string
				hdr  []string
			}{
				{"H1OriginalURISig", engine, []string{"X-Original-URI", engine + "/sig"}},
				{"H1OriginalURILatest", engine, []string{"X-Original-URI", "/latest"}},
				{"H1OriginalURIPublic", engine, []string{"X-Original-URI", public}},
				{"H1ForwardedUriSig", engine, []string{"X-Forwarded-Uri", engine + "/sig"}},
				{"H1ForwardedUriPublic", engine, []string{"X-Forwarded-Uri", public}},
				{"H1Both", engine, []string{"X-Original-URI", public, "X-Forwarded-Uri", public}},
				{"H2EncodedQuestionSig", engine + "%3F/sig", nil},
				{"H2EncodedQuestionSigLower", engine + "%3f/sig", nil},
				{"H2EncodedHashSig", engine + "%23/sig", nil},
				{"H2EncodedSlashSig", "/bin/26.1.1%2Fengine-26.1.1-linux-amd64.tar.gz%3F/sig", nil},
			} {
				t.Run(tt.name, func(t *testing.T) {
					resp, body := hget(t, "GET", url+tt.path, tt.hdr...)
					if resp.StatusCode/100 == 2 || bytes.Contains(body, secret[:64]) {
						t.Errorf("anonymous GET %s %q = %d with %d bytes; want no 2xx, never the archive", tt.path, tt.hdr, resp.StatusCode, len(body))
					}
				})
			}
			t.Run("AuthEndpointUnreachable", func(t *testing.T) {
				for _, path := range []string{site.AuthPath, "/_wharf/%61uth", "//_wharf/auth", "/_wharf/./auth", "/_WHARF/auth"} {
					resp, _ := hget(t, "GET", url+path, "X-Original-URI", engine, "X-Forwarded-Uri", engine)
					if resp.StatusCode != http.StatusNotFound {
						t.Errorf("GET %s from outside = %d, want 404", path, resp.StatusCode)
					}
				}
			})
			if t.Failed() {
				t.Logf("%s log:\n%s", proxy, p.Log())
			}
		})
	}
}
