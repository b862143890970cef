package site_test

import (
	"context"
	"encoding/base64"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/wharfhq/wharf/internal/browsertest"
	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/site"
	"github.com/wharfhq/wharf/site/auth"
)

// go test -update also copies a screenshot to docs/page.png. The flag may
// be registered by another test file of the package too.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files and docs/page.png")
	}
}

func pageUpdate() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// pageServe starts the download server on loopback over tree, with the
// page mounted and the real auth database, and returns its base URL.
func pageServe(t *testing.T, tree *pageTree, db *auth.DB) string {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	// The commands on the page show a public URL, as in production.
	page, err := site.NewPage(site.PageConfig{Store: tree.Store, Auth: db, Secret: pageSecret, Logger: logger, BaseURL: "https://dl.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := site.New(site.Config{Store: tree.Store, Auth: db, Sessions: page, Page: page, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestPageChromium drives Debian's chromium through the page: list, log
// in with an API key from the download link, download and verify with
// openssl, see what the session may take, log out.
func TestPageChromium(t *testing.T) {
	chromium := testenv.Chromium(t)
	openssl := testenv.Tool(t, "openssl")
	ctx := context.Background()

	tree := newPageTree(t)
	db, err := auth.Open(ctx, filepath.Join(t.TempDir(), "wharf.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.CreateOrg(ctx, "acme", site.LevelBasic); err != nil {
		t.Fatal(err)
	}
	_, key, err := db.CreateAPIKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	base := pageServe(t, tree, db)

	downloads := t.TempDir()
	bctx := browsertest.Open(t, chromium.DevToolsURL, 3*time.Minute, downloads)
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		browsertest.Do(t, bctx, what, steps...)
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return strings.Join(strings.Fields(s), " ")
	}
	status := func(path string) int {
		t.Helper()
		// The browser navigates with its session cookie, as a click on a
		// link would (the page's CSP allows no fetch).
		resp, err := chromedp.Run(bctx, chromedp.NavigateResponse(base+path))
		if err != nil {
			t.Fatalf("navigate to %s: %v", path, err)
		}
		return int(resp.Status)
	}
	shots := t.TempDir()
	shot := func(name string, width int64) string {
		t.Helper()
		return pageScreenshot(t, bctx, shots, name, width)
	}

	// The page needs no JavaScript: the whole flow runs with it off
	// (browsertest.Open turns it off).

	// The list: exactly the files of latest and preview in releases.json.
	run("open the page", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("login")))
	listed, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("[data-file]")].map(e => e.dataset.file)`))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	m := pageFetchManifest(t, base)
	for _, v := range []string{pageFetch(t, base+"/latest"), pageFetch(t, base+"/preview")} {
		r, ok := m.Find(strings.TrimSpace(v))
		if !ok {
			t.Fatalf("releases.json has no %s", v)
		}
		for _, a := range r.Artifacts {
			want = append(want, a.FileName())
		}
	}
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("the page lists\n%v\nreleases.json has\n%v", listed, want)
	}
	// Keyboard: the first Tab reaches the skip link, which shows a focus ring.
	run("tab", chromedp.KeyEvent(kb.Tab))
	focus, err := chromedp.Run(bctx, chromedp.Evaluate[string](`(() => {
		const e = document.activeElement, st = getComputedStyle(e);
		return e.className + " " + st.outlineStyle + " " + st.outlineWidth;
	})()`))
	if err != nil || focus != "skip solid 3px" {
		t.Errorf("after Tab the focus is on %q (%v), want the skip link with a 3px outline", focus, err)
	}
	shot("page-1280.png", 1280)
	shot("page-390.png", 390)
	run("back to desktop", chromedp.EmulateViewport(1280, 900))

	// "Log in" with a wrong key, by keyboard alone: Tab on to "Log in",
	// Enter, type into the field that has the focus, Enter. The message
	// names no part of the credential.
	for tabs := 0; ; tabs++ {
		id, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.activeElement.id`))
		if err != nil {
			t.Fatal(err)
		}
		if id == "login" {
			break
		}
		if tabs == 10 {
			t.Fatalf("10 Tabs from the skip link did not reach Log in (at %q)", id)
		}
		run("tab", chromedp.KeyEvent(kb.Tab))
	}
	run("enter", chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.ID("credential")))
	fctx, fcancel := context.WithTimeout(bctx, 10*time.Second)
	err = chromedp.Do(fctx, chromedp.WaitReady(chromedp.CSS("#credential:focus")))
	fcancel()
	if err != nil {
		t.Fatalf("the login form does not put the focus in its field: %v", err)
	}
	run("wrong key", chromedp.KeyEvent("wk_not-a-key"), chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.ID("login-error")))
	if got := text("#login-error"); !strings.Contains(got, "was not accepted") {
		t.Errorf("wrong key message = %q", got)
	}
	shot("login-error-390.png", 390)
	run("back to desktop", chromedp.EmulateViewport(1280, 900))

	// A basic download leads to the login form and, after it, to the file.
	file := "engine-26.1.1-linux-amd64.tar.gz"
	run("download link",
		chromedp.Navigate(base+"/"),
		chromedp.Click(chromedp.CSS(`[data-file="`+file+`"] a.dl`)),
		chromedp.WaitVisible(chromedp.ID("credential")),
	)
	got, name, err := browsertest.Download(bctx, downloads, func() error {
		return chromedp.Do(bctx, chromedp.SendKeys(chromedp.ID("credential"), key), chromedp.Click(chromedp.ID("submit")))
	})
	if err != nil {
		t.Fatalf("log in and download: %v", err)
	}
	if name != file {
		t.Errorf("download named %q, want %q", name, file)
	}
	pageOpenSSLVerify(t, openssl, base, "/"+tree.artifact(t, "26.1.1", "engine", "x86").Key, got)

	// Logged in: who, what the session may take, full refused.
	run("page after login", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("logout")))
	if got := text("#allowed"); got != "public, basic" {
		t.Errorf("the session may download %q, want public, basic", got)
	}
	if got := text(".account .who"); !strings.Contains(got, "Logged in with API key") || !strings.Contains(got, "acme") {
		t.Errorf("account = %q", got)
	}
	node := "treasury-node-26.1.1-amd64.tar"
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-file="`+node+`"] a.dl').length`)); err != nil || n != 0 {
		t.Errorf("a full artifact has %d links for a basic org (%v)", n, err)
	}
	if got := status("/img/26.1.1/" + node); got != http.StatusForbidden {
		t.Errorf("full artifact for a basic org = %d, want 403", got)
	}
	run("page after login", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("logout")))
	shot("page-logged-in-1280.png", 1280)
	// The README's picture: the first screen of the logged-in page.
	run("viewport", chromedp.EmulateViewport(1280, 1000))
	hero, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(shots, "docs-page.png"), hero, 0o644); err != nil {
		t.Fatal(err)
	}
	shot("page-logged-in-390.png", 390)
	run("back to desktop", chromedp.EmulateViewport(1280, 900))

	// Log out: the session is gone, basic downloads need a login again.
	run("log out", chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("login")))
	if href, err := chromedp.Run(bctx, chromedp.AttributeValue(chromedp.CSS(`[data-file="`+file+`"] a.dl`), "href")); err != nil || !strings.HasPrefix(href.Value, "/login?next=") {
		t.Errorf("after logout the download link is %q (%v)", href.Value, err)
	}
	if got := status("/bin/26.1.1/engine-26.1.1-linux-arm64.tar.gz"); got != http.StatusUnauthorized {
		t.Errorf("basic artifact after logout = %d, want 401", got)
	}

	// macOS visitors get the quarantine note first.
	if _, err := chromedp.Call(bctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{
		UserAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
	}); err != nil {
		t.Fatal(err)
	}
	run("mac", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("macos")))
	first, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("#macos, .release").id`))
	if err != nil || first != "macos" {
		t.Errorf("first section for macOS = %q (%v), want macos", first, err)
	}
	shot("page-mac-390.png", 390)

	if pageUpdate() {
		if err := os.WriteFile(filepath.Join("..", "docs", "page.png"), hero, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	keepScreenshots(t, shots)
}

// pageScreenshot takes a full-page screenshot of the tab at width into
// dir/name, and checks the page as it is shown: nothing wider than the
// viewport, WCAG AA contrast for every visible text, a label or name for
// every control.
func pageScreenshot(t *testing.T, bctx context.Context, dir, name string, width int64) string {
	t.Helper()
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		browsertest.Do(t, bctx, what, steps...)
	}
	run("viewport", chromedp.EmulateViewport(width, 900))
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	// Nothing may be wider than the viewport (no sideways scrolling).
	wide, err := chromedp.Run(bctx, chromedp.Evaluate[string](`(() => {
		const w = document.documentElement.clientWidth;
		const e = [...document.querySelectorAll("body *")].find(e => e.getBoundingClientRect().right > w + 1);
		return e ? e.outerHTML.slice(0, 120) + " right=" + e.getBoundingClientRect().right + " width=" + w : "";
	})()`))
	if err != nil || wide != "" {
		t.Errorf("%s: an element is wider than the viewport (%v): %s", name, err, wide)
	}
	// Every visible text meets WCAG's contrast minimum.
	low, err := chromedp.Run(bctx, chromedp.Evaluate[contrastReport](contrastJS))
	if err != nil {
		t.Fatalf("%s: contrast: %v", name, err)
	}
	if len(low.Failures) > 0 {
		t.Errorf("%s: text below the WCAG AA contrast minimum (4.5:1, 3:1 for large text):\n%s", name, strings.Join(low.Failures, "\n"))
	}
	if low.Texts == 0 {
		t.Errorf("%s: the contrast check found no text", name)
	}
	t.Logf("%s: %d texts, lowest contrast %.2f:1 (%s)", name, low.Texts, low.Lowest, low.Where)
	// Every control has a label and every link or button a name.
	unnamed, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("input:not([type=hidden]), select, textarea, a, button, summary")]
		.filter(e => (e.matches("input, select, textarea") ? !(e.labels && e.labels.length) : !e.textContent.trim()) && !e.getAttribute("aria-label"))
		.map(e => e.outerHTML.slice(0, 100))`))
	if err != nil || len(unnamed) > 0 {
		t.Errorf("%s: controls without a label or name (%v): %q", name, err, unnamed)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s (%d bytes)", p, len(png))
	return p
}

// keepScreenshots copies the screenshots in dir to $WHARF_SCREENSHOTS,
// when set, for a look.
func keepScreenshots(t *testing.T, dir string) {
	t.Helper()
	keep := os.Getenv("WHARF_SCREENSHOTS")
	if keep == "" {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil {
			err = os.WriteFile(filepath.Join(keep, e.Name()), b, 0o644)
		}
		if err != nil {
			t.Error(err)
		}
	}
}

// pageMaxHeight is how tall the page of the demo release (every default
// artifact, release notes) may be at 1280 px wide, logged out: one screen
// and a half, where one card per artifact made it 3,290 px.
const pageMaxHeight = 1400

// TestPageChromiumLayout holds the layout a customer lands on: the
// default release (six binaries, two images) with notes fits in
// pageMaxHeight at 1280 px, and the first download button is the one of
// the visitor's system, told by the User-Agent and the client hints the
// browser sends, for Linux x86-64, Linux arm64 (Firefox says so in its
// User-Agent; Chrome says x86_64 there and tells the architecture only in
// Sec-CH-UA-Arch, which it sends after the page asked for it) and macOS.
func TestPageChromiumLayout(t *testing.T) {
	chromium := testenv.Chromium(t)
	ctx := context.Background()
	notes, err := publish.RenderNotes([]byte("## What changed\n\n- **engine** starts 2× faster on a cold cache.\n- `treasury token create --ttl` takes a duration.\n\nUpgrade notes: none.\n"))
	if err != nil {
		t.Fatal(err)
	}
	tree := newPageTreeOf(t, publish.DefaultArtifacts(), []publish.Release{{Version: "26.1.1", NotesHTML: notes}})
	db, err := auth.Open(ctx, filepath.Join(t.TempDir(), "wharf.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	base := pageServe(t, tree, db)
	bctx := browsertest.Open(t, chromium.DevToolsURL, 2*time.Minute, t.TempDir())
	shots := t.TempDir()

	const (
		chromeLinux = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"
		chromeMac   = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"
		firefoxArm  = "Mozilla/5.0 (X11; Linux aarch64; rv:140.0) Gecko/20100101 Firefox/140.0"
	)
	hints := func(platform, arch string) *emulation.UserAgentMetadata {
		return &emulation.UserAgentMetadata{
			Brands:   []*emulation.UserAgentBrandVersion{{Brand: "Chromium", Version: "156"}},
			Platform: platform, PlatformVersion: "1.0", Architecture: arch,
		}
	}
	tests := []struct {
		name  string
		ua    string
		hints *emulation.UserAgentMetadata // nil: the browser sends none (Firefox)
		want  string                       // the build of the first download button
		mac   bool                         // the macOS note comes before the releases
	}{
		{"LinuxX86", chromeLinux, hints("Linux", "x86"), "x86", false},
		{"LinuxArm64Firefox", firefoxArm, nil, "arm", false},
		{"LinuxArm64Chrome", chromeLinux, hints("Linux", "arm"), "arm", false},
		{"MacOS", chromeMac, hints("macOS", "arm"), "mac", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := chromedp.Call(bctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: tt.ua, UserAgentMetadata: tt.hints}); err != nil {
				t.Fatal(err)
			}
			// Twice: the second visit carries the hints the first asked for.
			for range 2 {
				browsertest.Do(t, bctx, "open the page", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("a.dl")))
			}
			first, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("a.dl").closest("td").dataset.build + " " + document.querySelector("thead th.mine").dataset.build`))
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.want + " " + tt.want; first != want {
				t.Errorf("first download button and marked column = %q, want %q", first, want)
			}
			macFirst, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.querySelector("#macos, .release").id === "macos"`))
			if err != nil || macFirst != tt.mac {
				t.Errorf("macOS note first = %v (%v), want %v", macFirst, err, tt.mac)
			}
			height, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.documentElement.scrollHeight`))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: the page is %d px tall at 1280 px wide", tt.name, height)
			if height > pageMaxHeight {
				t.Errorf("the page is %d px tall at 1280 px wide, want at most %d", height, pageMaxHeight)
			}
			pageScreenshot(t, bctx, shots, "layout-"+tt.name+"-1280.png", 1280)
			pageScreenshot(t, bctx, shots, "layout-"+tt.name+"-390.png", 390)
		})
	}
	keepScreenshots(t, shots)
}

// contrastReport is what contrastJS finds on a page.
type contrastReport struct {
	Texts    int      `json:"texts"`    // elements with visible text checked
	Lowest   float64  `json:"lowest"`   // the lowest contrast ratio among them
	Where    string   `json:"where"`    // the element with the lowest
	Failures []string `json:"failures"` // below 4.5:1 (3:1 for large text)
}

// contrastJS computes the WCAG 2 contrast ratio of every element with
// visible text against the first opaque background behind it (the page
// uses flat colours, no images behind text).
const contrastJS = `(() => {
  const parse = c => {
    const m = c.match(/rgba?\(([^)]+)\)/);
    if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1};
  };
  const lum = c => {
    const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  };
  const background = e => {
    for (; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) return c;
    }
    return {r: 255, g: 255, b: 255, a: 1};
  };
  const name = e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className ? "." + String(e.className).trim().split(/\s+/).join(".") : "");
  const out = {texts: 0, lowest: 21, where: "", failures: []};
  const seen = new Set();
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n; (n = walk.nextNode()); ) {
    const e = n.parentElement;
    if (!n.textContent.trim() || seen.has(e)) continue;
    seen.add(e);
    const st = getComputedStyle(e), r = e.getBoundingClientRect();
    if (r.width <= 1 || r.height <= 1 || st.visibility === "hidden" || r.right < 0) continue;
    const bg = background(e), fg = parse(st.color);
    const mix = k => fg[k] * fg.a + bg[k] * (1 - fg.a);
    const L1 = lum({r: mix("r"), g: mix("g"), b: mix("b")}), L2 = lum(bg);
    const ratio = (Math.max(L1, L2) + 0.05) / (Math.min(L1, L2) + 0.05);
    const size = parseFloat(st.fontSize), bold = parseInt(st.fontWeight, 10) >= 700;
    const large = size >= 24 || (bold && size >= 18.66);
    out.texts++;
    if (ratio < out.lowest) { out.lowest = ratio; out.where = name(e) + " " + JSON.stringify(n.textContent.trim().slice(0, 30)); }
    if (ratio < (large ? 3 : 4.5)) out.failures.push(name(e) + " " + ratio.toFixed(2) + ":1 " + st.color + " on " + JSON.stringify(bg) + " " + JSON.stringify(n.textContent.trim().slice(0, 40)));
  }
  return out;
})()`

func pageFetch(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body := pageBody(t, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d", url, resp.StatusCode)
	}
	return body
}

func pageFetchManifest(t *testing.T, base string) *publish.Manifest {
	t.Helper()
	m, err := publish.ReadManifest(strings.NewReader(pageFetch(t, base+"/"+publish.KeyManifest)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// pageOpenSSLVerify checks the downloaded file against its /sig and dl.pub
// from the server, with openssl.
func pageOpenSSLVerify(t *testing.T, openssl, base, path, file string) {
	t.Helper()
	dir := t.TempDir()
	der, err := base64.StdEncoding.DecodeString(strings.TrimSpace(pageFetch(t, base+path+"/sig")))
	if err != nil {
		t.Fatalf("signature: %v", err)
	}
	sig, pub := filepath.Join(dir, "file.sig.der"), filepath.Join(dir, "dl.pub")
	if err := os.WriteFile(sig, der, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, []byte(pageFetch(t, base+"/"+publish.KeyPublicKey)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(openssl, "dgst", "-sha256", "-verify", pub, "-signature", sig, file).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Verified OK") {
		t.Fatalf("openssl does not verify the download: %v\n%s", err, out)
	}
}
