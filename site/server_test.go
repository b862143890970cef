package site_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wharfhq/wharf/internal/clientip"
	"github.com/wharfhq/wharf/internal/rpcstatus"
	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/dir"
	"github.com/wharfhq/wharf/site"
	"github.com/wharfhq/wharf/site/auth"
)

// env is a running server over a directory tree with two releases and a
// preview, and the auth fixture.
type env struct {
	url   string
	tr    *tree
	cr    *creds
	clock *testenv.Clock
	logs  *logs
	root  string
	store *flakyStore
}

func newEnv(t *testing.T, tune ...func(*site.Config)) *env {
	t.Helper()
	tr, root := newDirTree(t)
	e := &env{tr: tr, root: root, clock: testenv.NewClock(time.Now().UTC()), logs: newLogs()}
	e.cr = newCreds(t, e.clock)
	e.store = &flakyStore{Store: tr.store}
	cfg := site.Config{
		Store:  e.store,
		Auth:   e.cr.db,
		Logger: slog.New(e.logs),
		Now:    e.clock.Now,
	}
	for _, f := range tune {
		f(&cfg)
	}
	e.url, _ = serve(t, cfg)
	tr.baseURL = e.url
	tr.big["treasury-node"] = 3<<20 + 123
	tr.publish("26.1.1")
	tr.publish("26.1.2")
	tr.publish("26.1.3-pre.4")
	return e
}

// curl runs curl with args and returns its stdout; it fails the test when
// curl exits non-zero.
func curl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(testenv.Tool(t, "curl"), append([]string{"-sS"}, args...)...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("curl %s: %v %s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// status runs curl and returns the HTTP status it got.
func status(t *testing.T, args ...string) int {
	t.Helper()
	var code int
	fmt.Sscan(curl(t, append([]string{"-o", os.DevNull, "-w", "%{http_code}"}, args...)...), &code)
	return code
}

func TestShortURLs(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, path string
		want       int
		location   string
	}{
		{"Latest", "/x86/treasury-cli", 302, "/bin/26.1.2/treasury-cli-26.1.2-linux-amd64.tar.gz"},
		{"LatestTag", "/latest/arm/engine", 302, "/bin/26.1.2/engine-26.1.2-linux-arm64.tar.gz"},
		{"Preview", "/preview/mac/treasury-cli", 302, "/bin/26.1.3-pre.4/treasury-cli-26.1.3-pre.4-macos-arm64.tar.gz"},
		{"Version", "/26.1.1/x86/cord", 302, "/bin/26.1.1/cord-26.1.1-linux-amd64.tar.gz"},
		{"MacOSAlias", "/macos/treasury-cli", 302, "/bin/26.1.2/treasury-cli-26.1.2-macos-arm64.tar.gz"},
		{"Image", "/x86/treasury-node", 302, "/img/26.1.2/treasury-node-26.1.2-amd64.tar"},
		{"ImageArm", "/26.1.1/arm/treasury-demo", 302, "/img/26.1.1/treasury-demo-26.1.1-arm64.tar"},
		{"Sig", "/x86/treasury-cli/sig", 302, "/bin/26.1.2/treasury-cli-26.1.2-linux-amd64.tar.gz/sig"},
		{"SigMacOS", "/macos/treasury-cli/sig", 302, "/bin/26.1.2/treasury-cli-26.1.2-macos-arm64.tar.gz/sig"},
		{"SigTagged", "/preview/x86/treasury-node/sig", 302, "/img/26.1.3-pre.4/treasury-node-26.1.3-pre.4-amd64.tar/sig"},
		{"ErrUnknownBuild", "/sparc/treasury-cli", 404, ""},
		{"ErrUnknownBuildTagged", "/latest/sparc/treasury-cli", 404, ""},
		{"ErrUnknownName", "/x86/treasury-pro", 404, ""},
		{"ErrUnknownVersion", "/26.9.9/x86/treasury-cli", 404, ""},
		{"ErrMalformedVersion", "/26.01.1/x86/treasury-cli", 404, ""},
		{"ErrImageOnMac", "/mac/treasury-node", 404, ""},
		{"ErrTooDeep", "/latest/x86/treasury-cli/extra", 404, ""},
		{"ErrUnknownTop", "/index.php", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := get(t, "GET", e.url+tt.path)
			if resp.StatusCode != tt.want {
				t.Fatalf("GET %s = %d %s, want %d", tt.path, resp.StatusCode, body, tt.want)
			}
			if got := resp.Header.Get("Location"); got != tt.location {
				t.Errorf("Location = %q, want %q", got, tt.location)
			}
			if tt.want == 404 {
				var e site.Error
				if err := json.Unmarshal(body, &e); err != nil || e.Code != 5 || e.Status != rpcstatus.NotFound.String() || e.Message == "" {
					t.Errorf("body = %s (%v), want a NotFound error", body, err)
				}
			}
		})
	}
}

func TestDownloadWithCurl(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	k := key(t, "26.1.2", "treasury-cli", "x86")
	want := e.tr.files[k]

	t.Run("RedirectAndContentDisposition", func(t *testing.T) {
		// -J takes the file name from Content-Disposition.
		cmd := exec.Command(testenv.Tool(t, "curl"), "-fsSLOJ", e.url+"/x86/treasury-cli")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("curl: %v %s", err, out)
		}
		got, err := os.ReadFile(filepath.Join(dir, "treasury-cli-26.1.2-linux-amd64.tar.gz"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Error("downloaded bytes differ from the published ones")
		}
	})
	t.Run("Headers", func(t *testing.T) {
		resp, _ := get(t, "HEAD", e.url+"/"+k)
		h := resp.Header
		checks := map[string]string{
			"Content-Disposition": `attachment; filename="treasury-cli-26.1.2-linux-amd64.tar.gz"`,
			"Content-Length":      fmt.Sprint(len(want)),
			"Accept-Ranges":       "bytes",
			"Content-Type":        "application/gzip",
		}
		for name, v := range checks {
			if got := h.Get(name); got != v {
				t.Errorf("%s = %q, want %q", name, got, v)
			}
		}
		if h.Get("ETag") == "" || h.Get("Last-Modified") == "" {
			t.Errorf("ETag %q, Last-Modified %q: want both", h.Get("ETag"), h.Get("Last-Modified"))
		}
		resp, _ = get(t, "GET", e.url+"/"+k, "If-None-Match", h.Get("ETag"))
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("If-None-Match = %d, want 304", resp.StatusCode)
		}
	})
	t.Run("Range", func(t *testing.T) {
		resp, body := get(t, "GET", e.url+"/"+k, "Range", "bytes=10-19")
		if resp.StatusCode != http.StatusPartialContent || string(body) != string(want[10:20]) {
			t.Errorf("Range = %d %q, want 206 %q", resp.StatusCode, body, want[10:20])
		}
	})
	t.Run("ResumeBigImage", func(t *testing.T) {
		ik := key(t, "26.1.2", "treasury-node", "x86")
		full := e.tr.files[ik]
		out := filepath.Join(dir, "node.tar")
		writeFile(t, out, full[:1<<20+7])
		curl(t, "-f", "-C", "-", "-o", out, "-u", e.cr.fullKey+":", e.url+"/"+ik)
		got, _ := os.ReadFile(out)
		if sha256.Sum256(got) != sha256.Sum256(full) {
			t.Errorf("resumed download: %d bytes, differs from the %d published", len(got), len(full))
		}
	})
	t.Run("SigVerifiesWithOpenSSL", func(t *testing.T) {
		openssl := testenv.Tool(t, "openssl")
		for _, sigPath := range []string{"/x86/treasury-cli/sig", "/" + k + "/sig", "/latest/x86/treasury-cli/sig"} {
			art := filepath.Join(dir, "art")
			writeFile(t, art, []byte(curl(t, "-fL", e.url+"/x86/treasury-cli")))
			writeFile(t, filepath.Join(dir, "sig.b64"), []byte(curl(t, "-fL", e.url+sigPath)))
			writeFile(t, filepath.Join(dir, "dl.pub"), []byte(curl(t, "-f", e.url+"/dl.pub")))
			if out, err := exec.Command(openssl, "base64", "-d", "-A", "-in", filepath.Join(dir, "sig.b64"), "-out", filepath.Join(dir, "sig")).CombinedOutput(); err != nil {
				t.Fatalf("base64: %v %s", err, out)
			}
			out, err := exec.Command(openssl, "dgst", "-sha256", "-verify", filepath.Join(dir, "dl.pub"), "-signature", filepath.Join(dir, "sig"), art).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Verified OK") {
				t.Errorf("%s: openssl: %v %s", sigPath, err, out)
			}
		}
	})
}

func TestTopLevel(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		path, want, ctype string
	}{
		{"/latest", "26.1.2\n", "text/plain; charset=utf-8"},
		{"/preview", "26.1.3-pre.4\n", "text/plain; charset=utf-8"},
		{"/dl.pub", string(e.tr.pubPEM), "application/x-pem-file"},
		{"/install", "", "text/x-shellscript; charset=utf-8"},
		{"/releases.json", "", "application/json"},
		{"/bin/26.1.2/SHA256SUMS", "", "text/plain; charset=utf-8"},
		{"/img/26.1.2/SHA256SUMS/sig", "", "text/plain; charset=utf-8"},
		{"/bin/26.1.2/engine-26.1.2-linux-amd64.tar.gz.sig", "", "text/plain; charset=utf-8"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, body := get(t, "GET", e.url+tt.path)
			if resp.StatusCode != 200 {
				t.Fatalf("GET %s = %d %s", tt.path, resp.StatusCode, body)
			}
			if tt.want != "" && string(body) != tt.want {
				t.Errorf("body = %q, want %q", body, tt.want)
			}
			if got := resp.Header.Get("Content-Type"); got != tt.ctype {
				t.Errorf("Content-Type = %q, want %q", got, tt.ctype)
			}
		})
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t)
	basic := "/" + key(t, "26.1.2", "engine", "x86")
	full := "/" + key(t, "26.1.2", "treasury-demo", "arm")
	public := "/" + key(t, "26.1.2", "treasury-cli", "mac")
	bearer := func(tok string) []string { return []string{"-H", "Authorization: Bearer " + tok} }
	apikey := func(k string) []string { return []string{"-u", k + ":"} }
	tests := []struct {
		name string
		path string
		args []string
		want int
	}{
		{"PublicAnonymous", public, nil, 200},
		{"PublicWithBadKeyIgnored", public, apikey("wk_nope"), 200},
		{"BasicAnonymous", basic, nil, 401},
		{"BasicKeyBasicOrg", basic, apikey(e.cr.basicKey), 200},
		{"BasicKeyAsPassword", basic, []string{"-u", ":" + e.cr.basicKey}, 200},
		{"FullKeyBasicArtifact", basic, apikey(e.cr.fullKey), 200},
		{"ErrBasicOrgFullArtifact", full, apikey(e.cr.basicKey), 403},
		{"FullKeyFullOrg", full, apikey(e.cr.fullKey), 200},
		{"TokenFullUser", full, bearer(e.cr.alice), 200},
		{"TokenBasicUser", basic, bearer(e.cr.bob), 200},
		{"ErrTokenBasicUserFull", full, bearer(e.cr.bob), 403},
		{"ErrTokenNoOrg", basic, bearer(e.cr.loneUser), 403},
		{"ErrWrongKey", basic, apikey(e.cr.basicKey + "x"), 401},
		{"ErrRevokedKey", basic, apikey(e.cr.revokedKey), 401},
		{"ErrRemovedUserToken", basic, bearer(e.cr.carol), 401},
		{"ErrMalformedToken", basic, bearer("abc.def"), 401},
		{"ErrAlgNoneToken", basic, bearer("eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + strings.Split(e.cr.alice, ".")[1] + "."), 401},
		{"ErrUnknownScheme", basic, []string{"-H", "Authorization: Digest abc"}, 401},
		{"SigNeedsNoAuth", full + "/sig", nil, 200},
		{"ShortRedirectNeedsNoAuth", "/x86/treasury-node", nil, 302},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := status(t, append(tt.args, e.url+tt.path)...); got != tt.want {
				t.Errorf("GET %s = %d, want %d", tt.path, got, tt.want)
			}
		})
	}
	t.Run("ErrorBodies", func(t *testing.T) {
		resp, body := get(t, "GET", e.url+basic)
		if got := resp.Header.Get("WWW-Authenticate"); got != `Basic realm="wharf", Bearer` {
			t.Errorf("WWW-Authenticate = %q", got)
		}
		var er site.Error
		if err := json.Unmarshal(body, &er); err != nil || er.Code != 16 || er.Status != rpcstatus.Unauthenticated.String() {
			t.Errorf("401 body = %s", body)
		}
		resp, body = get(t, "GET", e.url+full, "Authorization", "Bearer "+e.cr.bob)
		if err := json.Unmarshal(body, &er); err != nil || resp.StatusCode != 403 || er.Code != 7 || er.Status != rpcstatus.PermissionDenied.String() {
			t.Errorf("403 body = %s", body)
		}
	})
	t.Run("ErrExpiredToken", func(t *testing.T) {
		// RFC 6750 section 3: an expired bearer token is invalid_token,
		// and the message says when it expired and what to do.
		resp, body := get(t, "GET", e.url+basic, "Authorization", "Bearer "+e.cr.expired)
		at := e.cr.expiredAt.UTC().Format(time.RFC3339)
		want := `Basic realm="wharf", Bearer error="invalid_token", error_description="the access token expired at ` + at + `"`
		if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || got != want {
			t.Errorf("expired token: %d, WWW-Authenticate = %q, want 401 and %q", resp.StatusCode, got, want)
		}
		var er site.Error
		wantMsg := "the access token expired at " + at + " (access tokens last 24 hours): get a new one (treasury token create, or wharf token create --user NAME on the server) or use an API key (curl -u KEY:)"
		if err := json.Unmarshal(body, &er); err != nil || er.Message != wantMsg {
			t.Errorf("expired token: body %s, want the message %q", body, wantMsg)
		}
	})
	t.Run("UnauthenticatedLoggedAtInfo", func(t *testing.T) {
		// A click on a download without logging in is routine: its 401
		// is logged at INFO beside the access line, not as a warning.
		get(t, "GET", e.url+basic)
		e.logs.messages(t, "request failed", 1)
		e.logs.mu.Lock()
		defer e.logs.mu.Unlock()
		for _, r := range e.logs.records {
			if r.Message == "request failed" && r.Level != slog.LevelInfo {
				var status string
				r.Attrs(func(a slog.Attr) bool {
					if a.Key == "status" {
						status = a.Value.String()
					}
					return true
				})
				if status == "401" {
					t.Errorf("a 401 is logged at %v, want INFO", r.Level)
				}
			}
		}
	})
	t.Run("FollowRedirectWithKey", func(t *testing.T) {
		got := curl(t, "-fL", "-u", e.cr.fullKey+":", e.url+"/arm/treasury-demo")
		if got != string(e.tr.files[strings.TrimPrefix(full, "/")]) {
			t.Error("curl -L -u KEY: got other bytes")
		}
		got = curl(t, "-fL", "-H", "Authorization: Bearer "+e.cr.alice, e.url+"/arm/treasury-demo")
		if got != string(e.tr.files[strings.TrimPrefix(full, "/")]) {
			t.Error("curl -L with a bearer token got other bytes")
		}
	})
	t.Run("ErrExpiredToken", func(t *testing.T) {
		e.clock.Advance(24*time.Hour + time.Second)
		defer e.clock.Advance(-(24*time.Hour + time.Second))
		if got := status(t, append(bearer(e.cr.alice), e.url+full)...); got != 401 {
			t.Errorf("expired token: %d, want 401", got)
		}
	})
	t.Run("LevelChangeApplies", func(t *testing.T) {
		if err := e.cr.db.SetOrgLevel(context.Background(), "acme", site.LevelFull); err != nil {
			t.Fatal(err)
		}
		defer e.cr.db.SetOrgLevel(context.Background(), "acme", site.LevelBasic)
		if got := status(t, append(apikey(e.cr.basicKey), e.url+full)...); got != 200 {
			t.Errorf("after set-level full: %d, want 200", got)
		}
	})
}

// TestBadPaths sends raw request lines (clients clean paths) and checks
// that nothing outside the tree is served.
func TestBadPaths(t *testing.T) {
	e := newEnv(t)
	secret := "TOP-SECRET-OUTSIDE-THE-TREE"
	writeFile(t, filepath.Join(filepath.Dir(e.root), "secret"), []byte(secret))
	writeFile(t, filepath.Join(e.root, "bin", "26.1.2", "secret"), []byte(secret))
	host := strings.TrimPrefix(e.url, "http://")
	tests := []struct {
		name, path string
		want       []int
	}{
		{"DotDot", "/bin/../../secret", []int{400}},
		{"DotDotCanonical", "/bin/26.1.2/../../../secret", []int{400}},
		{"EncodedDotDot", "/bin/26.1.2/%2e%2e/%2e%2e/%2e%2e/secret", []int{400}},
		{"EncodedDotDotUpper", "/%2E%2E/secret", []int{400}},
		{"EncodedSlash", "/bin/26.1.2/..%2f..%2f..%2fsecret", []int{400}},
		{"EncodedSlashUpper", "/bin%2F26.1.2%2Fsecret", []int{400}},
		{"Backslash", "/bin/26.1.2/..\\..\\..\\secret", []int{400}},
		{"EncodedBackslash", "/bin/26.1.2/..%5c..%5csecret", []int{400}},
		{"NUL", "/bin/26.1.2/secret%00.tar.gz", []int{400}},
		{"Dot", "/bin/./26.1.2/secret", []int{400}},
		{"UnlistedFileInVersion", "/bin/26.1.2/secret", []int{404}},
		{"UnlistedSig", "/bin/26.1.2/secret.sig", []int{404}},
		{"UnlistedFileSig", "/bin/26.1.2/secret/sig", []int{404}},
		{"DoubleSlash", "//secret", []int{404}},
		{"StaticTraversal", "/static/../secret", []int{400}},
		{"ShortDotDot", "/../x86/treasury-cli", []int{400}},
		{"Absolute", "/bin/26.1.2//etc/passwd", []int{404}},
		{"Overlong", "/" + strings.Repeat("a/", 1500), []int{400, 404, 414, 431}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", tt.path, host)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if strings.Contains(string(body), secret) {
				t.Fatalf("GET %s served the secret", tt.path)
			}
			ok := false
			for _, w := range tt.want {
				ok = ok || resp.StatusCode == w
			}
			if !ok {
				t.Errorf("GET %s = %d %s, want one of %v", tt.path, resp.StatusCode, body, tt.want)
			}
		})
	}
	t.Run("CurlPathAsIs", func(t *testing.T) {
		out := curl(t, "--path-as-is", e.url+"/bin/26.1.2/../../../secret")
		if strings.Contains(out, secret) {
			t.Fatal("served the secret")
		}
	})
}

func TestMethodNotAllowed(t *testing.T) {
	e := newEnv(t)
	resp, _ := get(t, "POST", e.url+"/latest")
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /latest = %d Allow %q, want 405 GET, HEAD", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestNewReleaseWhileServing: a release published while the server runs
// is served at once, and a download of the old one in flight completes.
func TestNewReleaseWhileServing(t *testing.T) {
	e := newEnv(t)
	old := key(t, "26.1.2", "treasury-node", "x86")
	req, _ := http.NewRequest("GET", e.url+"/"+old, nil)
	req.SetBasicAuth(e.cr.fullKey, "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := sha256.New()
	if _, err := io.CopyN(h, resp.Body, 1<<20); err != nil {
		t.Fatal(err)
	}

	e.tr.publish("26.1.3")

	if _, body := get(t, "GET", e.url+"/latest"); string(body) != "26.1.3\n" {
		t.Errorf("/latest = %q after publishing 26.1.3", body)
	}
	r2, _ := get(t, "GET", e.url+"/x86/treasury-cli")
	if got, want := r2.Header.Get("Location"), "/"+key(t, "26.1.3", "treasury-cli", "x86"); got != want {
		t.Errorf("short URL -> %q, want %q", got, want)
	}
	if _, err := io.Copy(h, resp.Body); err != nil {
		t.Fatalf("in-flight download: %v", err)
	}
	if got, want := fmt.Sprintf("%x", h.Sum(nil)), fmt.Sprintf("%x", sha256.Sum256(e.tr.files[old])); got != want {
		t.Errorf("in-flight download sha256 %s, want %s", got, want)
	}
}

// TestRefreshInterval: with an interval the tree is re-checked only when
// the clock passes it.
func TestRefreshInterval(t *testing.T) {
	e := newEnv(t, func(c *site.Config) { c.RefreshInterval = time.Minute })
	if _, body := get(t, "GET", e.url+"/latest"); string(body) != "26.1.2\n" {
		t.Fatalf("/latest = %q", body)
	}
	r, _ := get(t, "GET", e.url+"/x86/cord")
	first := r.Header.Get("Location")
	e.tr.publish("26.1.3")
	r, _ = get(t, "GET", e.url+"/x86/cord")
	if got := r.Header.Get("Location"); got != first {
		t.Errorf("within the interval: %s, want the cached %s", got, first)
	}
	e.clock.Advance(time.Minute)
	r, _ = get(t, "GET", e.url+"/x86/cord")
	if got, want := r.Header.Get("Location"), "/"+key(t, "26.1.3", "cord", "x86"); got != want {
		t.Errorf("after the interval: %s, want %s", got, want)
	}
}

func TestStoreUnavailable(t *testing.T) {
	e := newEnv(t)
	k := "/" + key(t, "26.1.2", "treasury-cli", "x86")
	if resp, _ := get(t, "GET", e.url+k); resp.StatusCode != 200 {
		t.Fatalf("before: %d", resp.StatusCode)
	}
	e.store.setDown(true)
	for _, p := range []string{k, "/latest", "/healthz", "/" + key(t, "26.1.2", "engine", "x86") + "/sig"} {
		resp, body := get(t, "GET", e.url+p)
		var er site.Error
		json.Unmarshal(body, &er)
		if resp.StatusCode != 503 || er.Code != 14 || er.Status != rpcstatus.Unavailable.String() {
			t.Errorf("store down: GET %s = %d %s, want 503 code 14", p, resp.StatusCode, body)
		}
	}
	// Redirects keep working from the last manifest read.
	if resp, _ := get(t, "GET", e.url+"/x86/treasury-cli"); resp.StatusCode != 302 {
		t.Errorf("store down: short URL = %d, want 302 from the cached manifest", resp.StatusCode)
	}
	e.store.setDown(false)
	for _, p := range []string{k, "/latest", "/healthz"} {
		if resp, _ := get(t, "GET", e.url+p); resp.StatusCode != 200 {
			t.Errorf("store back: GET %s = %d, want 200", p, resp.StatusCode)
		}
	}
}

func TestStoreUnavailableAtStart(t *testing.T) {
	tr, _ := newDirTree(t)
	fs := &flakyStore{Store: tr.store}
	fs.setDown(true)
	url, _ := serve(t, site.Config{Store: fs})
	tr.publish("26.1.2")
	if resp, _ := get(t, "GET", url+"/x86/treasury-cli"); resp.StatusCode != 503 {
		t.Errorf("no manifest ever read, store down: %d, want 503", resp.StatusCode)
	}
	fs.setDown(false)
	if resp, _ := get(t, "GET", url+"/x86/treasury-cli"); resp.StatusCode != 302 {
		t.Errorf("store back: %d, want 302", resp.StatusCode)
	}
}

func TestEmptyTree(t *testing.T) {
	tr, _ := newDirTree(t)
	url, _ := serve(t, site.Config{Store: tr.store})
	for _, p := range []string{"/x86/treasury-cli", "/latest", "/bin/26.1.2/treasury-cli-26.1.2-linux-amd64.tar.gz"} {
		if resp, _ := get(t, "GET", url+p); resp.StatusCode != 404 {
			t.Errorf("empty tree: GET %s = %d, want 404", p, resp.StatusCode)
		}
	}
}

func TestRateLimits(t *testing.T) {
	e := newEnv(t, func(c *site.Config) {
		c.RateIP, c.BurstIP = 1, 3
		c.RateKey, c.BurstKey = 0.5, 1
	})
	for i := range 3 {
		if resp, _ := get(t, "GET", e.url+"/latest"); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	resp, body := get(t, "GET", e.url+"/latest")
	var er site.Error
	json.Unmarshal(body, &er)
	if resp.StatusCode != 429 || er.Code != 8 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("4th request = %d %s Retry-After %q, want 429 code 8", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	if resp, _ := get(t, "GET", e.url+"/healthz"); resp.StatusCode != 200 {
		t.Errorf("/healthz is limited: %d", resp.StatusCode)
	}
	e.clock.Advance(10 * time.Second)
	full := e.url + "/" + key(t, "26.1.2", "treasury-demo", "x86")
	if resp, _ := get(t, "GET", full, "Authorization", "Bearer "+e.cr.alice); resp.StatusCode != 200 {
		t.Fatalf("first download: %d", resp.StatusCode)
	}
	if resp, _ := get(t, "GET", full, "Authorization", "Bearer "+e.cr.alice); resp.StatusCode != 429 {
		t.Errorf("second download of the same user at once: %d, want 429", resp.StatusCode)
	}
	if resp, _ := get(t, "GET", full, "Authorization", "Basic "+basicAuth(e.cr.fullKey)); resp.StatusCode != 200 {
		t.Errorf("another credential: %d, want 200", resp.StatusCode)
	}
	e.clock.Advance(2 * time.Second)
	if resp, _ := get(t, "GET", full, "Authorization", "Bearer "+e.cr.alice); resp.StatusCode != 200 {
		t.Errorf("after the wait: %d, want 200", resp.StatusCode)
	}
}

func basicAuth(user string) string {
	r, _ := http.NewRequest("GET", "/", nil)
	r.SetBasicAuth(user, "")
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Basic ")
}

func TestHugeHeaders(t *testing.T) {
	e := newEnv(t)
	resp, _ := get(t, "GET", e.url+"/latest", "X-Big", strings.Repeat("a", 200<<10))
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("200 KiB header = %d, want 431", resp.StatusCode)
	}
}

// TestSlowClients: a client that sends its headers too slowly is cut off
// by ReadHeaderTimeout, and one that reads a download too slowly by the
// download's time budget.
func TestSlowClients(t *testing.T) {
	tr, _ := newDirTree(t)
	lg := newLogs()
	url, _ := serve(t, site.Config{Store: tr.store, Logger: slog.New(lg), MinRate: 1 << 40, DownloadGrace: 300 * time.Millisecond},
		func(s *http.Server) { s.ReadHeaderTimeout = 300 * time.Millisecond })
	tr.publish("26.1.2")
	host := strings.TrimPrefix(url, "http://")

	t.Run("Headers", func(t *testing.T) {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, "GET /latest HTTP/1.1\r\nHost: x\r\n")
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		b, err := io.ReadAll(conn) // returns when the server closes
		if err != nil {
			t.Fatalf("the server kept a slow client: %v", err)
		}
		if strings.Contains(string(b), "200 OK") {
			t.Errorf("answered an incomplete request: %q", b)
		}
	})
	t.Run("Reader", func(t *testing.T) {
		// A public artifact large enough to fill the socket buffers.
		p := "/" + key(t, "26.1.2", "treasury-cli", "x86")
		big := payload("slow", 64<<20)
		tr.put(p[1:], big)
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.(*net.TCPConn).SetReadBuffer(4096)
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", p)
		// The handler gives up at the deadline, having sent part of it.
		rec := lg.wait(t, p)
		var n int64
		fmt.Sscan(rec["bytes"], &n)
		if n >= int64(len(big)) {
			t.Errorf("a client that did not read was sent all %d bytes", n)
		}
	})
}

func TestMetricsAndHealth(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(c *site.Config) { c.Metrics = reg })
	get(t, "GET", e.url+"/x86/treasury-cli")
	get(t, "GET", e.url+"/"+key(t, "26.1.2", "treasury-cli", "x86"))
	get(t, "GET", e.url+"/nope")
	if resp, body := get(t, "GET", e.url+"/healthz"); resp.StatusCode != 200 || !strings.Contains(string(body), "ok") {
		t.Errorf("/healthz = %d %s", resp.StatusCode, body)
	}
	_, body := get(t, "GET", e.url+"/metrics")
	size := len(e.tr.files[key(t, "26.1.2", "treasury-cli", "x86")])
	for _, want := range []string{
		`wharf_http_requests_total{code="302",route="short"} 1`,
		`wharf_http_requests_total{code="200",route="canonical"} 1`,
		`wharf_http_requests_total{code="404",route="not_found"} 1`,
		fmt.Sprintf(`wharf_http_response_bytes_total{route="canonical"} %d`, size),
		`wharf_http_request_duration_seconds_bucket`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	log := e.logs.wait(t, "/x86/treasury-cli")
	if log["status"] != "302" || log["route"] != "short" || log["method"] != "GET" {
		t.Errorf("access log = %v", log)
	}
}

// fakePage stands in for the page helper's handler and sessions.
type fakePage struct{ principal *site.Principal }

func (p fakePage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(w, "page %s %s", r.Method, r.URL.Path)
}

func (p fakePage) Principal(*http.Request) (site.Principal, bool) {
	if p.principal == nil {
		return site.Principal{}, false
	}
	return *p.principal, true
}

func TestPageMounted(t *testing.T) {
	full := site.Principal{Kind: "user", Name: "alice", Level: site.LevelFull}
	e := newEnv(t, func(c *site.Config) {
		c.Page = fakePage{}
		c.Sessions = fakePage{principal: &full}
	})
	for _, p := range []string{"/", "/login", "/logout", "/static/page.css"} {
		for _, m := range []string{"GET", "POST"} {
			if _, body := get(t, m, e.url+p); string(body) != "page "+m+" "+p {
				t.Errorf("%s %s = %q, want the page", m, p, body)
			}
		}
	}
	// The session of the browser lets it download.
	if resp, _ := get(t, "GET", e.url+"/"+key(t, "26.1.2", "treasury-node", "arm")); resp.StatusCode != 200 {
		t.Errorf("download with a session: %d, want 200", resp.StatusCode)
	}
	// A bad Authorization header is not rescued by the session.
	if resp, _ := get(t, "GET", e.url+"/"+key(t, "26.1.2", "treasury-node", "arm"), "Authorization", "Bearer nope"); resp.StatusCode != 401 {
		t.Errorf("bad header with a session: %d, want 401", resp.StatusCode)
	}

	t.Run("NoPage", func(t *testing.T) {
		e := newEnv(t)
		if resp, _ := get(t, "GET", e.url+"/"); resp.StatusCode != 404 {
			t.Errorf("GET / without a page = %d, want 404", resp.StatusCode)
		}
	})
	t.Run("ExpiredSession", func(t *testing.T) {
		old := site.Principal{Kind: "user", Name: "alice", Level: site.LevelFull, Expires: time.Now().Add(-time.Hour)}
		e := newEnv(t, func(c *site.Config) { c.Sessions = fakePage{principal: &old} })
		if resp, _ := get(t, "GET", e.url+"/"+key(t, "26.1.2", "treasury-node", "arm")); resp.StatusCode != 401 {
			t.Errorf("expired session: %d, want 401", resp.StatusCode)
		}
	})
}

// presignStore presigns as an S3 store would, with a recognisable URL.
type presignStore struct{ publish.Store }

func (presignStore) PresignGet(_ context.Context, key, filename string, expiry time.Duration) (string, error) {
	return "http://objects.example/" + key + "?response-content-disposition=attachment%3B%20filename%3D" + filename + "&expires=" + fmt.Sprint(int(expiry.Seconds())), nil
}

func TestPresign(t *testing.T) {
	tr, _ := newDirTree(t)
	c := testenv.NewClock(time.Now().UTC())
	cr := newCreds(t, c)
	url, _ := serve(t, site.Config{Store: presignStore{tr.store}, Auth: cr.db, Now: c.Now, Presign: true, PresignExpiry: time.Minute})
	tr.publish("26.1.2")
	k := key(t, "26.1.2", "engine", "x86")
	resp, _ := get(t, "GET", url+"/"+k, "Authorization", "Bearer "+cr.alice)
	want := "http://objects.example/" + k + "?response-content-disposition=attachment%3B%20filename%3Dengine-26.1.2-linux-amd64.tar.gz&expires=60"
	if resp.StatusCode != 302 || resp.Header.Get("Location") != want {
		t.Errorf("presigned: %d %q, want 302 %q", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	if resp, _ := get(t, "GET", url+"/"+k); resp.StatusCode != 401 {
		t.Errorf("presign without credentials: %d, want 401", resp.StatusCode)
	}
	if resp, body := get(t, "GET", url+"/"+k+"/sig"); resp.StatusCode != 200 || len(body) == 0 {
		t.Errorf("sig with presign: %d, want 200 streamed", resp.StatusCode)
	}
	if _, err := site.New(site.Config{Store: tr.store, Presign: true}); err == nil {
		t.Error("Presign on a directory store: no error")
	}
	t.Run("DefaultExpiry", func(t *testing.T) {
		url, _ := serve(t, site.Config{Store: presignStore{tr.store}, Auth: cr.db, Now: c.Now, Presign: true})
		resp, _ := get(t, "GET", url+"/"+k, "Authorization", "Bearer "+cr.alice)
		loc := resp.Header.Get("Location")
		if want := fmt.Sprintf("&expires=%d", int(site.DefaultPresignExpiry.Seconds())); !strings.HasSuffix(loc, want) {
			t.Errorf("presigned without PresignExpiry: %q, want it to end %q", loc, want)
		}
		if site.DefaultPresignExpiry > time.Minute {
			t.Errorf("DefaultPresignExpiry %s: a URL outlives its key's revocation by more than a minute", site.DefaultPresignExpiry)
		}
	})
}

// TestGracefulShutdown: a download in flight when the server is told to
// stop completes; new connections are refused.
func TestGracefulShutdown(t *testing.T) {
	tr, _ := newDirTree(t)
	tr.big["treasury-node"] = 8 << 20
	s, err := site.New(site.Config{Store: tr.store})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- shell.Serve(ctx, site.HTTPServer(s, nil), ln, 30*time.Second) }()
	tr.publish("26.1.2")
	url := "http://" + ln.Addr().String()
	p := "/" + key(t, "26.1.2", "treasury-cli", "x86")
	big := payload("shutdown", 32<<20)
	tr.put(p[1:], big)
	resp, err := http.Get(url + p)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := sha256.New()
	io.CopyN(h, resp.Body, 1<<20)
	cancel()
	if _, err := io.Copy(h, resp.Body); err != nil {
		t.Fatalf("in-flight download cut by shutdown: %v", err)
	}
	if fmt.Sprintf("%x", h.Sum(nil)) != fmt.Sprintf("%x", sha256.Sum256(big)) {
		t.Error("in-flight download differs")
	}
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("still accepting after shutdown")
	}
}

// TestRateLimitClientGroups: the per-address limit counts an IPv6 client
// by its /64 (one customer holds a whole /64, and would otherwise get 2^64
// buckets), an IPv4 client by its address; behind a trusted proxy it
// counts the address the proxy recorded, and logs it.
func TestRateLimitClientGroups(t *testing.T) {
	tr, _ := newDirTree(t)
	tr.publish("26.1.1")
	resolver, err := clientip.Parse([]string{"10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	l := newLogs()
	srv, err := site.New(site.Config{Store: tr.store, RateIP: 0.001, BurstIP: 1, TrustedProxies: resolver, Logger: slog.New(l)})
	if err != nil {
		t.Fatal(err)
	}
	do := func(remote, xff string) int {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, "/latest", nil)
		req.RemoteAddr = remote
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		return rec.Code
	}
	steps := []struct {
		name, remote, xff string
		want              int
	}{
		{"IPv6First", "[2001:db8:1:2::1]:4000", "", 200},
		{"IPv6SameSlash64", "[2001:db8:1:2:ffff::9]:4001", "", 429},
		{"IPv6OtherSlash64", "[2001:db8:1:3::1]:4000", "", 200},
		{"IPv4First", "192.0.2.1:4000", "", 200},
		{"IPv4Neighbour", "192.0.2.2:4000", "", 200},
		{"ProxyClientA", "10.1.1.1:5000", "198.51.100.7", 200},
		{"ProxyClientB", "10.1.1.1:5000", "198.51.100.8", 200},
		{"ProxyClientAAgain", "10.1.1.1:5000", "198.51.100.7", 429},
		{"UntrustedPeerSpoofing", "192.0.2.1:4001", "198.51.100.99", 429},
	}
	for _, s := range steps {
		if got := do(s.remote, s.xff); got != s.want {
			t.Errorf("%s: %d, want %d", s.name, got, s.want)
		}
	}
	var remotes []string
	l.mu.Lock()
	for _, r := range l.records {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "remote" {
				remotes = append(remotes, a.Value.String())
			}
			return true
		})
	}
	l.mu.Unlock()
	if !slices.Contains(remotes, "198.51.100.7") || slices.Contains(remotes, "10.1.1.1:5000") {
		t.Errorf("log lines say remote %q, want the clients behind the proxy", remotes)
	}
}

// TestHealthzTellsTheTruth: /healthz answers 503 while the store's
// directory is missing, holds no published tree, or was deleted while
// serving, and 200 once it is back, without a restart.
func TestHealthzTellsTheTruth(t *testing.T) {
	root := filepath.Join(t.TempDir(), "public")
	st := dir.Open(root)
	t.Cleanup(func() { st.Close() })
	srv, err := site.New(site.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	health := func() (int, string) {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := health(); code != 503 || !strings.Contains(body, "unavailable") {
		t.Errorf("missing directory: %d %s, want 503", code, body)
	}
	if _, err := os.Stat(root); err == nil {
		t.Error("serving created the missing directory")
	}
	os.Mkdir(root, 0o755)
	if code, body := health(); code != 503 || !strings.Contains(body, "no published tree") {
		t.Errorf("empty directory: %d %s, want 503", code, body)
	}
	tr := newTree(t, st)
	tr.publish("26.1.1")
	if code, body := health(); code != 200 {
		t.Errorf("published: %d %s, want 200", code, body)
	}
	os.RemoveAll(root)
	if code, body := health(); code != 503 {
		t.Errorf("deleted while serving: %d %s, want 503", code, body)
	}
	os.Mkdir(root, 0o755) // a publisher makes it again
	tr.publish("26.1.2")
	if code, body := health(); code != 200 {
		t.Errorf("back: %d %s, want 200", code, body)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/latest", nil))
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != "26.1.2" {
		t.Errorf("/latest after the directory came back = %d %q", rec.Code, rec.Body)
	}
}

// TestDownloadMetricsAndAudit: downloads are counted by artifact, build
// and organisation, and every authenticated download attempt writes an
// audit line naming the organisations, the key or user, the artifact, the
// bytes and the status.
func TestDownloadMetricsAndAudit(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(c *site.Config) { c.Metrics = reg })
	engine := "/" + key(t, "26.1.2", "engine", "arm")
	node := "/" + key(t, "26.1.2", "treasury-node", "x86")
	get(t, "GET", e.url+"/"+key(t, "26.1.2", "treasury-cli", "x86"))
	get(t, "GET", e.url+engine, "Authorization", "Basic "+basicAuth(e.cr.basicKey))
	get(t, "GET", e.url+engine, "Authorization", "Basic "+basicAuth(e.cr.basicKey))
	get(t, "GET", e.url+node, "Authorization", "Basic "+basicAuth(e.cr.basicKey)) // 403: basic
	get(t, "GET", e.url+node, "Authorization", "Bearer "+e.cr.alice)
	wantDownloads(t, e.url,
		`wharf_downloads_total{artifact="treasury-cli",build="x86",org="anonymous"} 1`,
		`wharf_downloads_total{artifact="engine",build="arm",org="acme"} 2`,
		`wharf_downloads_total{artifact="treasury-node",build="x86",org="globex"} 1`,
	)
	audit := e.logs.messages(t, "download", 4)
	if len(audit) != 4 {
		t.Fatalf("%d audit lines, want 4 (the authenticated attempts): %v", len(audit), audit)
	}
	// Requests on separate connections may log in another order.
	find := func(f func(a map[string]string) bool) map[string]string {
		for _, a := range audit {
			if f(a) {
				return a
			}
		}
		t.Fatalf("no such audit line in %v", audit)
		return nil
	}
	size := fmt.Sprint(len(e.tr.files[key(t, "26.1.2", "engine", "arm")]))
	a := find(func(a map[string]string) bool { return a["artifact"] == engine[1:] })
	if a["orgs"] != "acme" || a["kind"] != "apikey" || a["id"] != e.cr.basicKeyID || a["bytes"] != size || a["status"] != "200" {
		t.Errorf("audit line = %v", a)
	}
	a = find(func(a map[string]string) bool { return a["status"] == "403" })
	if a["artifact"] != node[1:] || a["orgs"] != "acme" {
		t.Errorf("refused download audit line = %v", a)
	}
	a = find(func(a map[string]string) bool { return a["kind"] == "user" })
	if a["orgs"] != "globex" || a["id"] != "alice" || a["status"] != "200" || a["artifact"] != node[1:] {
		t.Errorf("user download audit line = %v", a)
	}
}

// TestMetricsElsewhere: with the metrics on their own listener, /metrics
// is not served on the public one.
func TestMetricsElsewhere(t *testing.T) {
	e := newEnv(t, func(c *site.Config) { c.MetricsElsewhere = true })
	if resp, _ := get(t, "GET", e.url+"/metrics"); resp.StatusCode != 404 {
		t.Errorf("/metrics on the public listener = %d, want 404", resp.StatusCode)
	}
}

// wantDownloads checks that /metrics of the server at url counts each of
// the downloads in want, and none of the one refused in every test (the
// basic org acme asking for the full image treasury-node).
func wantDownloads(t *testing.T, url string, want ...string) {
	t.Helper()
	_, body := get(t, "GET", url+"/metrics")
	for _, w := range want {
		if !strings.Contains(string(body), w) {
			t.Errorf("/metrics lacks %s", w)
		}
	}
	if strings.Contains(string(body), `wharf_downloads_total{artifact="treasury-node",build="x86",org="acme"}`) {
		t.Error("a refused download was counted")
	}
}

// busyAuth is an auth database with no connection free.
type busyAuth struct{}

func (busyAuth) Token(context.Context, string) (site.Principal, error) {
	return site.Principal{}, fmt.Errorf("check token: %w", auth.ErrBusy)
}

func (busyAuth) APIKey(context.Context, string) (site.Principal, error) {
	return site.Principal{}, fmt.Errorf("check API key: %w", auth.ErrBusy)
}

// TestAuthBusy: a credential that cannot be checked now is answered 503
// with Retry-After, not 401 (the client must not drop a valid key) nor 500.
func TestAuthBusy(t *testing.T) {
	tr, _ := newDirTree(t)
	url, _ := serve(t, site.Config{Store: tr.store, Auth: busyAuth{}})
	tr.publish("26.1.2")
	k := key(t, "26.1.2", "engine", "x86")
	for _, h := range [][2]string{{"Authorization", "Bearer x.y.z"}, {"Authorization", "Basic a2V5Og=="}} {
		resp, body := get(t, "GET", url+"/"+k, h[0], h[1])
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s with the auth database busy: %d, Retry-After %q (%s); want 503 with Retry-After", h[1], resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
}
