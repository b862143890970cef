package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/site"
)

// TestHostingShortCache: nginx keeps wharf's latest redirects a second,
// keyed on the URI wharf receives. /x86//engine is a 404 from wharf; it
// must not become the answer for /x86/engine (the key was
// nginx's normalised $uri, and 404s were kept).
func TestHostingShortCache(t *testing.T) {
	e := newHostingEnv(t)
	p := startProxy(t, e, "nginx")
	for i := range 3 {
		bad, _ := hget(t, "GET", p.URL()+"/x86//engine")
		resp, _ := hget(t, "GET", p.URL()+"/x86/engine")
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz" {
			t.Fatalf("round %d: /x86/engine after /x86//engine (%d) = %d to %q, want 302 to the engine", i, bad.StatusCode, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
}

// TestHostingLogs: no credential lands in the proxies' logs (M4 of issue
// 19: nginx's combined format writes $remote_user, which is the API key),
// and wharf counts the downloads the proxies served (L5: they were lost).
func TestHostingLogs(t *testing.T) {
	e := newHostingEnv(t)
	engine := "/bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz"
	for i, proxy := range []string{"nginx", "caddy"} {
		t.Run(proxy, func(t *testing.T) {
			logFile := filepath.Join(t.TempDir(), "access.log")
			var p *testenv.Proxy
			if proxy == "nginx" {
				p = startProxy(t, e, proxy, "--access-log", logFile)
			} else {
				p = startProxy(t, e, proxy)
			}
			for _, auth := range []string{"Basic " + b64(e.key+":"), "Basic " + b64(":"+e.key), "Bearer " + e.token} {
				if resp, _ := hget(t, "GET", p.URL()+engine, "Authorization", auth, "Cookie", "wharf_session="+e.token); resp.StatusCode != 200 {
					t.Fatalf("download = %d", resp.StatusCode)
				}
			}
			logs := p.Log()
			if proxy == "nginx" {
				b, err := os.ReadFile(logFile)
				if err != nil {
					t.Fatalf("nginx wrote no access log: %v", err)
				}
				logs = string(b)
			}
			if !strings.Contains(logs, engine) {
				t.Fatalf("the log has no line of the downloads:\n%s", logs)
			}
			if proxy == "nginx" && !strings.Contains(logs, `"apikey:`) {
				t.Errorf("nginx's log does not name the key id a download was allowed for:\n%s", logs)
			}
			for name, secret := range map[string]string{"API key": e.key, "token": e.token, "basic credentials": b64(e.key + ":")} {
				if strings.Contains(logs, secret) {
					t.Errorf("the %s log holds the %s", proxy, name)
				}
			}
			_, metrics := hget(t, "GET", e.wharf+"/metrics")
			want := fmt.Sprintf(`wharf_downloads_total{artifact="engine",build="x86",org="acme"} %d`, 3*(i+1))
			if !strings.Contains(string(metrics), want) {
				t.Errorf("wharf's metrics lack %s", want)
			}
		})
	}
}

// recorded is a request the recording upstream received.
type recorded struct {
	path string
	hdr  http.Header
	host string
}

// recorder is an upstream that records every request and answers the
// auth endpoint 401 with WWW-Authenticate and nosniff (as wharf does),
// everything else 302.
type recorder struct {
	mu   sync.Mutex
	reqs []recorded
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, recorded{r.URL.RequestURI(), r.Header.Clone(), r.Host})
	rc.mu.Unlock()
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.URL.Path == site.AuthPath {
		w.Header().Set("WWW-Authenticate", `Basic realm="wharf"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintln(w, `{"code":16}`)
		return
	}
	w.Header().Set("Location", "/bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz")
	w.WriteHeader(http.StatusFound)
}

func (rc *recorder) take() []recorded {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	r := rc.reqs
	rc.reqs = nil
	return r
}

// TestHostingProxyHeaders: what the proxies send wharf, with a recording
// upstream in its place. In every location that reaches wharf the last
// X-Forwarded-For hop is the proxy's peer, not the client's own header,
// X-Forwarded-Proto is set, the auth subrequest names
// the path in the proxy's one header only (a client's other one removed,
// H1) with a Host; a 401 reaches the client with one WWW-Authenticate and
// one X-Content-Type-Options.
func TestHostingProxyHeaders(t *testing.T) {
	e := newHostingEnv(t)
	rc := &recorder{}
	up := httptest.NewServer(rc)
	t.Cleanup(up.Close)
	engine := "/bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz"
	for _, proxy := range []string{"nginx", "caddy"} {
		t.Run(proxy, func(t *testing.T) {
			addr := testenv.FreeAddr(t)
			args := []string{"hosting", proxy, "--root", e.store, "--upstream", up.URL, "--listen", addr}
			var p *testenv.Proxy
			if proxy == "nginx" {
				args = append(args, "--server-name", "dl.example.com", "--cache-dir", filepath.Join(t.TempDir(), "cache"), "--auth-cache", filepath.Join(t.TempDir(), "auth"), "--access-log", "off")
				p = testenv.NewNginx(t, addr, mustRun(t, args...))
			} else {
				p = testenv.NewCaddy(t, addr, mustRun(t, args...))
			}
			own, other := site.HeaderOriginalURI, site.HeaderForwardURI
			if proxy == "caddy" {
				own, other = other, own
			}
			for _, path := range []string{"/x86/engine", "/latest/x86/engine", "/login", engine} {
				rc.take()
				resp, _ := hget(t, "GET", p.URL()+path, "X-Forwarded-For", "6.6.6.6", "X-Forwarded-Proto", "https",
					own, "/latest", other, "/latest", "X-Forwarded-Host", "evil.example")
				reqs := rc.take()
				if len(reqs) == 0 {
					t.Fatalf("GET %s (%d) did not reach the upstream", path, resp.StatusCode)
				}
				for _, r := range reqs {
					xff := r.hdr.Values("X-Forwarded-For")
					if len(xff) == 0 || !strings.HasSuffix(strings.Join(xff, ","), "127.0.0.1") {
						t.Errorf("GET %s: upstream %s got X-Forwarded-For %q, want the proxy's peer last", path, r.path, xff)
					}
					if got := r.hdr.Get("X-Forwarded-Proto"); got != "http" {
						t.Errorf("GET %s: upstream %s got X-Forwarded-Proto %q, want http", path, r.path, got)
					}
					if r.host == "" {
						t.Errorf("GET %s: upstream %s got no Host", path, r.path)
					}
					if r.path == site.AuthPath {
						if got := r.hdr.Values(own); len(got) != 1 || got[0] != engine {
							t.Errorf("auth subrequest %s = %q, want %q", own, got, engine)
						}
						if got := r.hdr.Values(other); len(got) != 0 {
							t.Errorf("auth subrequest carries the client's %s %q", other, got)
						}
					}
				}
				if path == engine {
					if resp.StatusCode != http.StatusUnauthorized {
						t.Errorf("GET %s = %d, want the upstream's 401", path, resp.StatusCode)
					}
					for _, h := range []string{"WWW-Authenticate", "X-Content-Type-Options"} {
						if n := len(resp.Header.Values(h)); n != 1 {
							t.Errorf("401: %d %s headers %q, want 1", n, h, resp.Header.Values(h))
						}
					}
				}
			}
		})
	}
}

// TestHostingHTTP10: a raw HTTP/1.0 request without Host, to an artifact
// and to wharf's short URLs, is answered as a request with one (401,
// 302), not 500 (the auth subrequest forwarded the empty Host).
func TestHostingHTTP10(t *testing.T) {
	e := newHostingEnv(t)
	for _, proxy := range []string{"nginx", "caddy"} {
		t.Run(proxy, func(t *testing.T) {
			p := startProxy(t, e, proxy)
			for path, want := range map[string]int{
				"/bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz":       401,
				"/bin/26.1.1/treasury-cli-26.1.1-linux-amd64.tar.gz": 200,
				"/x86/engine": 302,
			} {
				if got := rawStatus(t, p.Addr, "GET "+path+" HTTP/1.0\r\n\r\n"); got != want && !(proxy == "caddy" && got == 400) {
					t.Errorf("HTTP/1.0 without Host: GET %s = %d, want %d", path, got, want)
				}
			}
		})
	}
}

// rawStatus sends a raw request on a new connection and reads the status.
func rawStatus(t *testing.T, addr, req string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", req, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
