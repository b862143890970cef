package main

import (
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wharfhq/wharf/internal/browsertest"
	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
)

// TestServePageChromium is the download page as a customer meets it after
// the commands of docs/serve.md: `wharf publish` of the demo release,
// `wharf org create` and `wharf apikey create`, then `wharf serve`, in
// Debian's chromium with JavaScript off. It lists the latest release of
// releases.json, a basic download leads through the login form to the
// file (checked with openssl), a full image is refused, and logging out
// ends the session. site's TestPageChromium covers the page in depth.
func TestServePageChromium(t *testing.T) {
	chromium := testenv.Chromium(t)
	openssl := testenv.Tool(t, "openssl")
	dir := t.TempDir()
	addr := testenv.FreeAddr(t)
	base := "http://" + addr
	store, db, key := filepath.Join(dir, "public"), filepath.Join(dir, "wharf.db"), filepath.Join(dir, "dl.key")
	run := func(args ...string) string { t.Helper(); return mustRun(t, args...) }
	run("keygen", "--out", key)
	run("publish", "--version", "26.1.1", "--key", key, "--store", store, "--base-url", base, demoInputDir(t, "page"))
	run("org", "create", "acme", "--level", "basic", "--db", db)
	apiKey := lastLine(run("apikey", "create", "--org", "acme", "--db", db))
	startServe(t, "--store", store, "--listen", addr, "--db", db, "--session-secret", strings.Repeat("s", 32))

	downloads := t.TempDir()
	bctx := browsertest.Open(t, chromium.DevToolsURL, 2*time.Minute, downloads)
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		browsertest.Do(t, bctx, what, steps...)
	}

	// The list is the latest release of releases.json.
	do("open the page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("login")))
	listed, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("[data-file]")].map(e => e.dataset.file)`))
	if err != nil {
		t.Fatal(err)
	}
	m, err := publish.ReadManifest(strings.NewReader(httpGet(t, base+"/"+publish.KeyManifest)))
	if err != nil {
		t.Fatal(err)
	}
	r, ok := m.Find("26.1.1")
	if !ok {
		t.Fatal("releases.json has no 26.1.1")
	}
	var want []string
	for _, a := range r.Artifacts {
		want = append(want, a.FileName())
	}
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("the page lists\n%v\nreleases.json has\n%v", listed, want)
	}

	// A basic download: the login form, the API key, then the file.
	file := "engine-26.1.1-linux-amd64.tar.gz"
	do("download link", chromedp.Click(chromedp.CSS(`[data-file="`+file+`"] a.dl`)), chromedp.WaitVisible(chromedp.ID("credential")))
	got, name, err := browsertest.Download(bctx, downloads, func() error {
		return chromedp.Do(bctx, chromedp.SendKeys(chromedp.ID("credential"), apiKey), chromedp.Click(chromedp.ID("submit")))
	})
	if err != nil {
		t.Fatalf("log in and download: %v", err)
	}
	if name != file {
		t.Errorf("download named %q, want %q", name, file)
	}
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(httpGet(t, base+"/bin/26.1.1/"+file+"/sig")))
	if err != nil {
		t.Fatal(err)
	}
	sigFile := filepath.Join(dir, "engine.sig")
	if err := os.WriteFile(sigFile, sig, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(openssl, "dgst", "-sha256", "-verify", filepath.Join(dir, "dl.pub"), "-signature", sigFile, got).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Verified OK") {
		t.Fatalf("openssl does not verify the download: %v\n%s", err, out)
	}

	// Logged in as acme (basic): a full image is refused; logging out ends it.
	node := "/img/26.1.1/treasury-node-26.1.1-amd64.tar"
	if resp, err := chromedp.Run(bctx, chromedp.NavigateResponse(base+node)); err != nil || resp.Status != http.StatusForbidden {
		t.Errorf("full image for a basic session: %v %v, want 403", resp, err)
	}
	do("log out", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("logout")), chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("login")))
	if resp, err := chromedp.Run(bctx, chromedp.NavigateResponse(base+"/bin/26.1.1/"+file)); err != nil || resp.Status != http.StatusUnauthorized {
		t.Errorf("basic download after logout: %v %v, want 401", resp, err)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}
