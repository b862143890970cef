package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostingPinned runs the --pin-latest configurations in the real nginx
// and Caddy: latest and preview short URLs are answered by the proxy with
// wharf's own Location (wharf is not asked), they stay on the pinned
// release after a publish until the configuration is generated again (the
// trade-off docs/hosting.md states), and a name the release lacks is still
// wharf's answer.
func TestHostingPinned(t *testing.T) {
	e := newHostingEnv(t)
	for _, proxy := range []string{"nginx", "caddy"} {
		t.Run(proxy, func(t *testing.T) {
			p := startProxy(t, e, proxy, "--pin-latest")
			const short = "/x86/engine"
			want := "/bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz"
			asks := shortAsks(t, e)
			for _, path := range []string{short, "/latest" + short, short + "/sig"} {
				resp, _ := hget(t, http.MethodGet, p.URL()+path)
				w, _ := hget(t, http.MethodGet, e.wharf+path)
				if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != w.Header.Get("Location") {
					t.Errorf("%s: %d to %q, wharf %d to %q", path, resp.StatusCode, resp.Header.Get("Location"), w.StatusCode, w.Header.Get("Location"))
				}
				if got := resp.Header.Get("Cache-Control"); got != w.Header.Get("Cache-Control") {
					t.Errorf("%s: Cache-Control %q, wharf %q", path, got, w.Header.Get("Cache-Control"))
				}
			}
			if resp, _ := hget(t, http.MethodGet, p.URL()+short); resp.Header.Get("Location") != want {
				t.Errorf("%s: Location %q, want %q", short, resp.Header.Get("Location"), want)
			}
			// Three redirects above, each asked of wharf directly: the
			// proxy asked it nothing.
			if got := shortAsks(t, e) - asks; got != 3 {
				t.Errorf("wharf answered %d short URLs, want the 3 asked directly: the proxy asked too", got)
			}
			// Not in the release: wharf's 404 through the proxy.
			if resp, _ := hget(t, http.MethodGet, p.URL()+"/x86/no-such-tool"); resp.StatusCode != http.StatusNotFound {
				t.Errorf("/x86/no-such-tool: %d, want 404", resp.StatusCode)
			}
			if t.Failed() {
				t.Logf("%s log:\n%s", proxy, p.Log())
			}
		})
	}

	// A new release: wharf follows it, the pinned proxy does not until
	// its configuration is generated again.
	old := startProxy(t, e, "nginx", "--pin-latest")
	mustRun(t, "publish", "--version", "26.1.2", "--key", filepath.Join(e.dir, "dl.key"), "--store", e.store,
		"--base-url", "https://dl.example.com", demoInputDir(t, "hosting"))
	if w, _ := hget(t, http.MethodGet, e.wharf+"/x86/engine"); !strings.Contains(w.Header.Get("Location"), "26.1.2") {
		t.Fatalf("wharf: %q after publishing 26.1.2", w.Header.Get("Location"))
	}
	if resp, _ := hget(t, http.MethodGet, old.URL()+"/x86/engine"); !strings.Contains(resp.Header.Get("Location"), "26.1.1") {
		t.Errorf("pinned before the publish: %q, want 26.1.1 until generated again", resp.Header.Get("Location"))
	}
	fresh := startProxy(t, e, "nginx", "--pin-latest")
	if resp, _ := hget(t, http.MethodGet, fresh.URL()+"/x86/engine"); !strings.Contains(resp.Header.Get("Location"), "26.1.2") {
		t.Errorf("generated again: %q, want 26.1.2", resp.Header.Get("Location"))
	}
}

// shortAsks is how many short URLs wharf has answered.
func shortAsks(t *testing.T, e *hostingEnv) int {
	t.Helper()
	return metricSum(t, e.wharf, `route="short`)
}

// TestHostingPinnedNeeds: --pin-latest needs the manifest and a place to
// read the pointers from.
func TestHostingPinnedNeeds(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "releases.json")
	if err := os.WriteFile(manifest, []byte(`{"schema":1,"releases":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"ConfigOnly", []string{"--root", t.TempDir(), "--config-only"}, "not --config-only"},
		{"RemoteRoot", []string{"--root", "/nowhere/public", "--manifest", manifest}, "--store, or from --root"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"hosting", "nginx", "--upstream", "http://127.0.0.1:8080", "--pin-latest"}, tt.args...)
			_, _, err := pubRun(t, args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one saying %q", err, tt.want)
			}
		})
	}
}
