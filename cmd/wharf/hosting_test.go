package main

import (
	"bufio"
	stdbase64 "encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/rpcstatus"
	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/site"
)

// hostingEnv is a published directory, an auth database with a basic
// organisation's API key and a basic user's token, and wharf serve over
// them (serve with the flags given beside the test's own).
type hostingEnv struct {
	dir, store, pub string
	wharf           string // wharf serve's URL
	key, token      string
}

func newHostingEnv(t *testing.T, serveFlags ...string) *hostingEnv {
	t.Helper()
	testenv.Tool(t, "openssl")
	dir := t.TempDir()
	e := &hostingEnv{dir: dir, store: filepath.Join(dir, "public"), pub: filepath.Join(dir, "dl.pub")}
	db := filepath.Join(dir, "wharf.db")
	addr := testenv.FreeAddr(t)
	e.wharf = "http://" + addr
	mustRun(t, "keygen", "--out", filepath.Join(dir, "dl.key"))
	mustRun(t, "publish", "--version", "26.1.1", "--key", filepath.Join(dir, "dl.key"), "--store", e.store,
		"--base-url", "https://dl.example.com", demoInputDir(t, "hosting"))
	mustRun(t, "org", "create", "acme", "--level", "basic", "--db", db)
	e.key = lastLine(mustRun(t, "apikey", "create", "--org", "acme", "--db", db))
	mustRun(t, "user", "add", "bob", "--org", "acme", "--db", db)
	e.token = lastLine(mustRun(t, "token", "create", "--user", "bob", "--db", db))
	startServe(t, append([]string{"--store", e.store, "--listen", addr, "--db", db, "--refresh", "0"}, serveFlags...)...)
	return e
}

// authAsks is how many times wharf's auth endpoint has been asked.
func (e *hostingEnv) authAsks(t *testing.T) int {
	t.Helper()
	return metricSum(t, e.wharf, `route="auth"`)
}

// metricSum adds up wharf_http_requests_total at base over the series
// whose labels hold sel.
func metricSum(t *testing.T, base, sel string) int {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "wharf_http_requests_total{") && strings.Contains(line, sel) {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			n += int(v)
		}
	}
	return n
}

// hget does a request through the proxy, following no redirect.
func hget(t *testing.T, method, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestHosting serves the published tree with the real nginx and Caddy in
// front, configured by wharf hosting nginx / caddy, and wharf serve only
// answering the auth endpoint and the latest/preview short URLs.
func TestHosting(t *testing.T) {
	e := newHostingEnv(t)
	for _, proxy := range []string{"nginx", "caddy"} {
		t.Run(proxy, func(t *testing.T) {
			p := startProxy(t, e, proxy)
			checkHosting(t, e, p.URL())
			if t.Failed() {
				t.Logf("%s log:\n%s", proxy, p.Log())
			}
		})
	}
}

func checkHosting(t *testing.T, e *hostingEnv, url string) {
	cli := "bin/26.1.1/treasury-cli-26.1.1-linux-amd64.tar.gz"
	engine := "bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz"
	image := "img/26.1.1/treasury-node-26.1.1-amd64.tar"
	file := func(key string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(e.store, key))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	bearer := "Bearer " + e.token
	apikey := "Basic " + b64(e.key+":")

	t.Run("ShortURLs", func(t *testing.T) {
		for _, tt := range []struct{ path, want string }{
			{"/x86/treasury-cli", "/" + cli},
			{"/latest/x86/engine", "/" + engine},
			{"/x86/engine/sig", "/" + engine + "/sig"},
			{"/26.1.1/x86/engine", "/" + engine},
			{"/26.1.1/macos/treasury-cli", "/bin/26.1.1/treasury-cli-26.1.1-macos-arm64.tar.gz"},
			{"/26.1.1/x86/treasury-node/sig", "/" + image + "/sig"},
			{"/26.1.1/arm/treasury-demo", "/img/26.1.1/treasury-demo-26.1.1-arm64.tar"},
		} {
			resp, _ := hget(t, "GET", url+tt.path)
			if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != tt.want {
				t.Errorf("%s = %d to %q, want 302 to %s", tt.path, resp.StatusCode, resp.Header.Get("Location"), tt.want)
			}
		}
	})
	t.Run("PublicWithoutWharf", func(t *testing.T) {
		before := e.authAsks(t)
		resp, body := hget(t, "GET", url+"/"+cli)
		if resp.StatusCode != 200 || string(body) != string(file(cli)) {
			t.Fatalf("GET %s = %d, %d bytes; want 200 and the store's bytes", cli, resp.StatusCode, len(body))
		}
		if got := resp.Header.Get("Cache-Control"); got != publish.CacheImmutable {
			t.Errorf("Cache-Control = %q, want %q", got, publish.CacheImmutable)
		}
		if got := resp.Header.Get("Content-Disposition"); got != `attachment; filename="treasury-cli-26.1.1-linux-amd64.tar.gz"` {
			t.Errorf("Content-Disposition = %q", got)
		}
		hget(t, "GET", url+"/"+cli+".sig")
		hget(t, "GET", url+"/latest")
		if after := e.authAsks(t); after != before {
			t.Errorf("wharf's auth endpoint was asked %d times for public files", after-before)
		}
	})
	t.Run("SigVerifiesWithOpenSSL", func(t *testing.T) {
		// Redirects followed, as the spec says.
		resp, err := http.Get(url + "/x86/treasury-cli/sig")
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != publish.CacheImmutable {
			t.Fatalf("/x86/treasury-cli/sig = %d, Cache-Control %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
		dir := t.TempDir()
		writeTestFile(t, filepath.Join(dir, "x.sig.b64"), sig)
		writeTestFile(t, filepath.Join(dir, "x"), file(cli))
		cmd := exec.Command("sh", "-c", `openssl base64 -d -A -in x.sig.b64 -out x.sig && openssl dgst -sha256 -verify "$PUB" -signature x.sig x`)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "PUB="+e.pub)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Verified OK") {
			t.Errorf("openssl: %v %s", err, out)
		}
	})
	t.Run("Latest", func(t *testing.T) {
		resp, body := hget(t, "GET", url+"/latest")
		if resp.StatusCode != 200 || string(body) != "26.1.1\n" || resp.Header.Get("Cache-Control") != publish.CacheRevalidate {
			t.Errorf("/latest = %d %q, Cache-Control %q", resp.StatusCode, body, resp.Header.Get("Cache-Control"))
		}
	})
	t.Run("BasicWithoutCredentials", func(t *testing.T) {
		resp, body := hget(t, "GET", url+"/"+engine)
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("GET %s = %d, WWW-Authenticate %q; want 401 with it", engine, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		var er site.Error
		if err := json.Unmarshal(body, &er); err != nil || er.Status != rpcstatus.Unauthenticated.String() {
			t.Errorf("401 body %q, want wharf's JSON error", body)
		}
		if len(body) > 1000 {
			t.Errorf("401 with %d bytes", len(body))
		}
	})
	for _, cred := range []struct{ name, auth string }{{"APIKey", apikey}, {"Token", bearer}} {
		t.Run("Basic"+cred.name, func(t *testing.T) {
			resp, body := hget(t, "GET", url+"/"+engine, "Authorization", cred.auth)
			if resp.StatusCode != 200 || string(body) != string(file(engine)) {
				t.Fatalf("GET %s = %d, %d bytes; want 200 and the store's bytes", engine, resp.StatusCode, len(body))
			}
			if got := resp.Header.Get("Cache-Control"); got != publish.CachePrivate {
				t.Errorf("Cache-Control = %q, want %q", got, publish.CachePrivate)
			}
			if got := resp.Header.Get("Content-Disposition"); got != `attachment; filename="engine-26.1.1-linux-amd64.tar.gz"` {
				t.Errorf("Content-Disposition = %q", got)
			}
		})
	}
	t.Run("ImageWithBasicOrg", func(t *testing.T) {
		for _, auth := range []string{apikey, bearer} {
			resp, body := hget(t, "GET", url+"/"+image, "Authorization", auth)
			var er site.Error
			if resp.StatusCode != http.StatusForbidden || json.Unmarshal(body, &er) != nil || er.Status != rpcstatus.PermissionDenied.String() {
				t.Errorf("GET %s = %d %q, want 403 with wharf's JSON error", image, resp.StatusCode, body)
			}
		}
	})
	t.Run("RangeAndHead", func(t *testing.T) {
		want := file(engine)
		resp, body := hget(t, "GET", url+"/"+engine, "Authorization", apikey, "Range", "bytes=10-19")
		if resp.StatusCode != http.StatusPartialContent || string(body) != string(want[10:20]) {
			t.Errorf("Range = %d %q, want 206 and bytes 10-19", resp.StatusCode, body)
		}
		resp, body = hget(t, "HEAD", url+"/"+engine, "Authorization", apikey)
		if resp.StatusCode != 200 || len(body) != 0 || resp.Header.Get("Content-Length") != strconv.Itoa(len(want)) {
			t.Errorf("HEAD = %d, Content-Length %q, want 200 and %d", resp.StatusCode, resp.Header.Get("Content-Length"), len(want))
		}
		resp, _ = hget(t, "HEAD", url+"/"+engine)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("HEAD without credentials = %d, want 401", resp.StatusCode)
		}
	})
	t.Run("BrowserSession", func(t *testing.T) {
		// The page's login (through the proxy to wharf) sets a session
		// cookie that the auth subrequest carries to wharf.
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Get(url + "/login")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
		if m == nil {
			t.Fatalf("GET /login = %d without a csrf field", resp.StatusCode)
		}
		form := neturl.Values{"credential": {e.key}, "csrf": {string(m[1])}, "next": {"/"}}
		req, _ := http.NewRequestWithContext(t.Context(), "POST", url+"/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", url)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, err = c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 3 {
			t.Fatalf("POST /login = %d, want a redirect", resp.StatusCode)
		}
		resp, err = c.Get(url + "/" + engine)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != string(file(engine)) {
			t.Errorf("download with the session cookie = %d, %d bytes; want 200 and the store's bytes", resp.StatusCode, len(body))
		}
	})
	t.Run("NothingElse", func(t *testing.T) {
		for _, path := range []string{"/bin/26.1.1/nope-26.1.1-linux-amd64.tar.gz", "/.wharf.lock", "/bin/26.1.1/.wharf-tmp-1", site.AuthPath} {
			resp, _ := hget(t, "GET", url+path, "Authorization", apikey)
			if resp.StatusCode < 400 || resp.StatusCode >= 500 {
				t.Errorf("GET %s = %d, want a 4xx", path, resp.StatusCode)
			}
		}
	})
}

func b64(s string) string { return stdbase64.StdEncoding.EncodeToString([]byte(s)) }

func writeTestFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestHostingHelpAndErrors(t *testing.T) {
	for _, cmd := range []string{"nginx", "caddy", "s3-policy"} {
		out, _, err := pubRun(t, "hosting", cmd, "--help")
		if err != nil || !strings.Contains(out, "Example") || !strings.Contains(out, "wharf hosting "+cmd) {
			t.Errorf("wharf hosting %s --help = %v:\n%s", cmd, err, out)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"hosting", "nginx", "--root", "public", "--upstream", "http://127.0.0.1:8080"}, "not an absolute path"},
		{[]string{"hosting", "caddy", "--root", "/srv/public", "--upstream", "127.0.0.1:8080", "--config-only"}, "is not a URL"},
		{[]string{"hosting", "nginx", "--root", "/srv/no-such-tree", "--upstream", "http://127.0.0.1:8080"}, "--config-only"},
		{[]string{"hosting", "caddy", "--root", "/srv/public", "--upstream", "http://127.0.0.1:8080", "--manifest", "/no/such/releases.json"}, "no such file"},
		{[]string{"hosting", "nginx", "--root", "/srv/a$b", "--upstream", "http://127.0.0.1:8080", "--config-only"}, "cannot hold"},
		{[]string{"hosting", "caddy", "--root", `/srv/a\b`, "--upstream", "http://127.0.0.1:8080", "--config-only"}, "cannot hold"},
		{[]string{"hosting", "nginx", "--root", "/srv/public", "--upstream", "http://127.0.0.1:8080", "--config-only", "--server-name", "a$host"}, "cannot hold"},
		{[]string{"hosting", "s3-policy", "--bucket", "b"}, "--config-only"},
		{[]string{"hosting", "nginx", "--upstream", "http://127.0.0.1:8080"}, "root"},
		{[]string{"hosting", "s3-policy", "--bucket", "a/b", "--config-only"}, "want a bucket name"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, err := pubRun(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestHostingTreeChecks: the commands read the tree they configure. A
// --root that is not on this machine is warned about; Caddy's
// configuration is refused while the tree holds a symbolic link (Caddy
// follows them, out of the tree too).
func TestHostingTreeChecks(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "public")
	mustRun(t, "keygen", "--out", filepath.Join(dir, "dl.key"))
	mustRun(t, "publish", "--version", "26.1.1", "--key", filepath.Join(dir, "dl.key"), "--store", store,
		"--base-url", "https://dl.example.com", demoInputDir(t, "tree"))
	man := filepath.Join(store, publish.KeyManifest)

	_, stderr, err := pubRun(t, "hosting", "nginx", "--root", store+"x", "--upstream", "http://127.0.0.1:8080", "--manifest", man)
	if err != nil || !strings.Contains(stderr, "warning") || !strings.Contains(stderr, store+"x") {
		t.Errorf("a --root not on this machine: err %v, stderr %q; want a warning naming it", err, stderr)
	}
	if _, stderr, err := pubRun(t, "hosting", "caddy", "--root", store, "--upstream", "http://127.0.0.1:8080"); err != nil || stderr != "" {
		t.Errorf("a published tree: err %v, stderr %q", err, stderr)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(store, "bin", "26.1.1", "x.sig")); err != nil {
		t.Fatal(err)
	}
	_, _, err = pubRun(t, "hosting", "caddy", "--root", store, "--upstream", "http://127.0.0.1:8080")
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("caddy over a tree with a symlink: err = %v, want a refusal", err)
	}
	if _, _, err := pubRun(t, "hosting", "nginx", "--root", store, "--upstream", "http://127.0.0.1:8080"); err != nil {
		t.Errorf("nginx (disable_symlinks) over a tree with a symlink: %v", err)
	}
}
