package main

import (
	"fmt"
	"html"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/site"
	"github.com/wharfhq/wharf/site/hosting"
)

// The sequences of the differential suite: what one request leaves behind
// (nginx's cache of wharf's answers) must never answer another. A trial
// sends a request with credentials spelled one way, then, within the
// cache's tenth of a second, one spelled another way (often the first with
// its live credentials taken out, leaving what a sibling site could have
// planted), to the same non-public artifact, or, in half the trials, to
// the same non-public blob or manifest of the registry tree under /v2/
// (GET or HEAD, with a registry client's Accept or a Range); each answer
// is held to wharf serve's own answer to the same request: never a 2xx
// where wharf refuses.

// seqTrials is the number of trials per proxy: WHARF_HOSTING_VARIANTS/4
// (default 2000/4), like the single requests' suite.
func seqTrials(t *testing.T) int { return max(1, diffVariants(t)/4) }

// spelled is one spelling of a request's credentials.
type spelled struct {
	auth    []string // Authorization values
	cookies []string // name=value pairs, in order
	comma   bool     // cookies joined with ", " instead of "; "
	split   bool     // in two Cookie headers
}

func (s spelled) lines() []string {
	var out []string
	for _, a := range s.auth {
		out = append(out, "Authorization: "+a)
	}
	sep := "; "
	if s.comma {
		sep = ", "
	}
	switch {
	case len(s.cookies) == 0:
	case s.split && len(s.cookies) > 1:
		out = append(out, "Cookie: "+strings.Join(s.cookies[:1], sep), "Cookie: "+strings.Join(s.cookies[1:], sep))
	default:
		out = append(out, "Cookie: "+strings.Join(s.cookies, sep))
	}
	return out
}

// live reports whether a cookie or Authorization value holds one of the
// tree's live credentials.
func (d *diffTree) live(v string) bool {
	for _, n := range []string{"basic-key", "full-key", "basic-token", "full-token", "basic-session", "full-session"} {
		if strings.Contains(v, d.secret[n]) || strings.Contains(v, b64(d.secret[n]+":")) || strings.Contains(v, b64(":"+d.secret[n])) {
			return true
		}
	}
	return false
}

// spell generates credentials: Authorization none, once or twice, in
// either scheme's spellings; session cookies named in any case, valid,
// planted, logged out, quoted, beside other cookies, in one or two
// headers, joined by ';' or ','.
func (d *diffTree) spell(r *rand.Rand) spelled {
	var s spelled
	for n := pick(r, 0, 0, 0, 0, 0, 1, 1, 1, 2); n > 0; n-- {
		s.auth = append(s.auth, pick(r,
			"Basic "+b64(d.secret["basic-key"]+":"), "Basic "+b64(":"+d.secret["full-key"]), "basic "+b64(d.secret["full-key"]+":"),
			"Bearer "+d.secret["full-token"], "BEARER "+d.secret["basic-token"], "Basic "+b64(d.secret["revoked-key"]+":"), "Basic !!!", "Bearer x"))
	}
	for n := pick(r, 0, 1, 1, 2, 2, 2, 3); n > 0; n-- {
		name := pick(r, site.SessionCookie, site.SessionCookie, strings.ToUpper(site.SessionCookie), "Wharf_Session", site.SessionCookie+" ")
		value := pick(r, d.secret["basic-session"], d.secret["full-session"], d.secret["full-session"], d.secret["logged-out-session"],
			"x", "v1.x.y", d.secret["full-key"], `"`+d.secret["full-session"]+`"`, "bad value\\", "")
		s.cookies = append(s.cookies, name+"="+value)
	}
	if r.IntN(3) == 0 {
		i := r.IntN(len(s.cookies) + 1)
		s.cookies = append(s.cookies[:i], append([]string{pick(r, site.CSRFCookie+"=abc", "a=1", "theme=dark")}, s.cookies[i:]...)...)
	}
	s.comma, s.split = r.IntN(8) == 0, r.IntN(4) == 0
	return s
}

// strip is s without its live credentials: what is left of a victim's
// request in an attacker's, the cookies a sibling site planted.
func (d *diffTree) strip(s spelled) spelled {
	out := spelled{comma: s.comma, split: s.split}
	for _, a := range s.auth {
		if !d.live(a) {
			out.auth = append(out.auth, a)
		}
	}
	for _, c := range s.cookies {
		if !d.live(c) {
			out.cookies = append(out.cookies, c)
		}
	}
	return out
}

// seqRequest is a GET of path with credentials, tagged by User-Agent.
func seqRequest(addr, path, agent string, s spelled) string {
	return seqRequestOf("GET", addr, path, agent, s)
}

// seqRequestOf is a request of path with credentials and any extra
// header lines, tagged by User-Agent.
func seqRequestOf(method, addr, path, agent string, s spelled, extra ...string) string {
	return method + " " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: " + agent + "\r\n" + headerLines(s.lines()) + headerLines(extra) + "Connection: close\r\n\r\n"
}

// registryAccept is the Accept header registry clients send for a
// manifest (crane's, containerd's and docker's types together).
const registryAccept = "Accept: application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, " +
	"application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json"

// protectedPaths are the tree's non-public artifacts, and, apart, the
// non-public objects of its registry tree: blobs and manifests by digest
// and tag, as a registry client asks for them under /v2/.
func (d *diffTree) protectedPaths(t *testing.T) (artifacts, registry []string) {
	t.Helper()
	for _, f := range d.files {
		if f.public || !f.allowed[levelFull] || strings.HasPrefix(f.name, "/") {
			continue
		}
		if publish.IsRegistryKey(f.name) {
			registry = append(registry, "/"+f.name)
		} else {
			artifacts = append(artifacts, "/"+f.name)
		}
	}
	if len(artifacts) == 0 || len(registry) == 0 {
		t.Fatalf("the tree has %d non-public artifacts and %d non-public registry objects, want some of both", len(artifacts), len(registry))
	}
	return artifacts, registry
}

// runSequences sends n trials to each proxy and fails t with every
// answer the proxy gave that wharf refuses.
func (d *diffTree) runSequences(t *testing.T, seed uint64, n int, proxies map[string]*testenv.Proxy) {
	t.Helper()
	artifacts, registry := d.protectedPaths(t)
	type trial struct {
		path, method string
		extra        []string // header lines beside the credentials
		seq          []spelled
	}
	r := rand.New(rand.NewPCG(seed, 0x5e9))
	trials := make([]trial, n)
	for i := range trials {
		a := d.spell(r)
		b := d.strip(a)
		if r.IntN(3) == 0 {
			b = d.spell(r)
		}
		tr := trial{path: pick(r, artifacts...), method: "GET", seq: []spelled{a, b, b}}
		if r.IntN(2) == 0 {
			// A registry client's request: a manifest with its Accept
			// header, a blob or part of one, GET or HEAD (what docker
			// and containerd ask first).
			tr.path, tr.method = pick(r, registry...), pick(r, "GET", "HEAD")
			if strings.Contains(tr.path, "/manifests/") && r.IntN(4) != 0 {
				tr.extra = append(tr.extra, registryAccept)
			}
			if strings.Contains(tr.path, "/blobs/") && r.IntN(3) == 0 {
				tr.extra = append(tr.extra, pick(r, "Range: bytes=0-9", "Range: bytes=-1", "Range: bytes=3-"))
			}
		}
		trials[i] = tr
	}
	var mu sync.Mutex
	var violations []string
	granted := map[string]int{}
	next := make(chan int)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				tr := trials[i]
				for name, p := range proxies {
					// The proxy first, in order, so that the cache
					// holds the first answer when the next ones come.
					got := make([]rawResponse, len(tr.seq))
					for j, s := range tr.seq {
						got[j] = rawDo(t, p.Addr, seqRequestOf(tr.method, p.Addr, tr.path, "seq", s, tr.extra...), tr.method)
					}
					kind := name
					if publish.IsRegistryKey(tr.path[1:]) {
						kind += " /v2/"
					}
					for j, s := range tr.seq {
						w := rawDo(t, d.wharf, seqRequestOf(tr.method, d.wharf, tr.path, "seq", s, tr.extra...), tr.method)
						mu.Lock()
						if got[j].status/100 == 2 {
							granted[kind]++
						}
						if got[j].status/100 == 2 && w.status/100 != 2 {
							violations = append(violations, fmt.Sprintf("%s, trial %d, request %d, %s %q %q: proxy %d where wharf answers %d to %q (the first: %q)",
								name, i, j+1, tr.method, tr.path, tr.extra, got[j].status, w.status, s.lines(), tr.seq[0].lines()))
						}
						mu.Unlock()
					}
				}
			}
		}()
	}
	for i := range trials {
		next <- i
	}
	close(next)
	wg.Wait()
	t.Logf("%d trials per proxy (seed %d), downloads served: %v", n, seed, granted)
	for name := range proxies {
		for _, kind := range []string{name, name + " /v2/"} {
			if granted[kind] == 0 {
				t.Errorf("%s: no trial was served: the generator reached nothing", kind)
			}
		}
	}
	if len(violations) > 0 {
		const max = 20
		shown := violations
		if len(shown) > max {
			shown = shown[:max]
		}
		t.Errorf("seed %d (WHARF_HOSTING_SEED=%d reruns it): %d violations:\n%s", seed, seed, len(violations), strings.Join(shown, "\n"))
	}
}

// TestHostingSequences runs the sequences against the real nginx (its
// auth cache on) and Caddy.
func TestHostingSequences(t *testing.T) {
	testenv.Tool(t, "nginx")
	testenv.Tool(t, "caddy")
	d := newDiffTree(t)
	n, seed := seqTrials(t), diffSeed(t)
	proxies := map[string]*testenv.Proxy{"nginx": d.proxy(t, "nginx"), "caddy": d.proxy(t, "caddy")}
	d.loadFiles(t)
	d.runSequences(t, seed, n, proxies)
}

// TestHostingPlantedCookie is the planted-cookie attack by hand: a
// victim's browser sends its session beside a cookie a sibling site set
// (WHARF_SESSION=x); an attacker then sends x alone. Through nginx's auth
// cache the attacker must not get the victim's download, and nginx's
// access log must never name the victim for the attacker's request.
func TestHostingPlantedCookie(t *testing.T) {
	testenv.Tool(t, "nginx")
	d := newDiffTree(t)
	log := filepath.Join(t.TempDir(), "access.log")
	p := d.proxy(t, "nginx", "--access-log", log)
	d.loadFiles(t)
	path := "/img/26.1.2/treasury-node-26.1.2-amd64.tar" // full
	victim := spelled{cookies: []string{strings.ToUpper(site.SessionCookie) + "=x", site.SessionCookie + "=" + d.secret["full-session"]}}
	attacker := spelled{cookies: []string{site.SessionCookie + "=x"}}
	served := 0
	for i := range 20 {
		rawDo(t, p.Addr, seqRequest(p.Addr, path, fmt.Sprintf("victim-%d", i), victim), "GET")
		if resp := rawDo(t, p.Addr, seqRequest(p.Addr, path, fmt.Sprintf("attacker-%d", i), attacker), "GET"); resp.status/100 == 2 {
			served++
		}
	}
	if served > 0 {
		t.Errorf("the attacker's planted cookie alone was served the full image %d of 20 times", served)
	}
	for _, line := range accessLines(t, log, 40) {
		if strings.Contains(line, `"attacker-`) && !strings.HasSuffix(line, `"-"`) && !strings.HasSuffix(line, `""`) {
			t.Errorf("nginx's log names someone for the attacker's request: %s", line)
		}
	}
}

// accessLines reads nginx's access log once it has n lines (nginx writes
// a line when it finishes a request, after the client may have read the
// answer), or fails.
func accessLines(t *testing.T, file string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(file)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) >= n {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx's access log has %d lines after 10 s, want %d", len(lines), n)
		}
		time.Sleep(20 * time.Millisecond) // polling a file nginx appends to
	}
}

// TestHostingKeyLimit: wharf serve --rate-key holds through the proxies,
// nginx's cached answers too: a burst of downloads with one key gets no
// more than the burst and the rate over the time it took, and every
// download nginx served is logged under the key it was allowed for.
func TestHostingKeyLimit(t *testing.T) {
	testenv.Tool(t, "nginx")
	testenv.Tool(t, "caddy")
	const rate, burst = 5, 5
	d := newDiffTree(t, "--rate-key", fmt.Sprintf("%d/s", rate))
	log := filepath.Join(t.TempDir(), "access.log")
	targets := map[string]string{
		"wharf": d.wharf,
		"nginx": d.proxy(t, "nginx", "--access-log", log, "--rate-key", fmt.Sprintf("%d/s", rate)).Addr,
		"caddy": d.proxy(t, "caddy").Addr,
	}
	path := "/bin/26.1.2/engine-26.1.2-linux-amd64.tar.gz" // basic
	for name, addr := range targets {
		t.Run(name, func(t *testing.T) {
			// A key of its own: the buckets are per key.
			out := mustRun(t, "apikey", "create", "--org", "acme", "--db", d.db)
			key, id := lastLine(out), apiKeyID(t, out)
			creds := spelled{auth: []string{"Basic " + b64(key+":")}}
			const sent = 120
			var mu sync.Mutex
			ok, statuses := 0, map[int]int{}
			start := time.Now()
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < sent; i += 4 {
						resp := rawDo(t, addr, seqRequest(addr, path, fmt.Sprintf("limit-%s-%d", id, i), creds), "GET")
						mu.Lock()
						statuses[resp.status]++
						if resp.status == http.StatusOK {
							ok++
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			took := time.Since(start)
			most := burst + int(took.Seconds()*rate) + 1
			t.Logf("%s: %d of %d downloads in %v served (at most %d), statuses %v", name, ok, sent, took, most, statuses)
			if ok == 0 || ok > most {
				t.Errorf("%s: %d of %d downloads with one key in %v, want 1 to %d (--rate-key %d/s)", name, ok, sent, took, most, rate)
			}
			if name == "nginx" {
				for _, line := range accessLines(t, log, sent) {
					if strings.Contains(line, `"limit-`+id+`-`) && strings.Contains(line, `" 200 `) && !strings.HasSuffix(line, `"apikey:`+id+`"`) {
						t.Errorf("nginx's log names another for a download with key %s: %s", id, line)
					}
				}
			}
		})
	}
}

// TestHostingNonDownloads: what the proxies answer beside downloads.
// wharf's /metrics (every organisation's downloads) and /healthz are not
// served through them, in any spelling; the published index.html gets
// the page's Content-Security-Policy; a file of the tree that is no
// published download (a release being published, a stray file) is 404
// through the proxies as from wharf, whoever asks; and a browser login
// through a proxy on a port of its own works (the page's cross-origin
// check sees the Host the client sent, with its port).
func TestHostingNonDownloads(t *testing.T) {
	testenv.Tool(t, "nginx")
	testenv.Tool(t, "caddy")
	d := newDiffTree(t)
	proxies := map[string]*testenv.Proxy{"nginx": d.proxy(t, "nginx"), "caddy": d.proxy(t, "caddy")}
	stray := map[string][]byte{
		"bin/26.9.9/engine-26.9.9-linux-amd64.tar.gz": []byte("being published"),
		"bin/26.1.2/stray-26.1.2-linux-amd64.tar.gz":  []byte("not in the manifest"),
	}
	for name, b := range stray {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(d.store, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, filepath.Join(d.store, name), b)
	}
	for name, p := range proxies {
		t.Run(name, func(t *testing.T) {
			for _, path := range []string{"/metrics", "/healthz", "/metrics?x=1", "//metrics", "/%6detrics", "/metrics/", "/./healthz", "/%68ealthz", "/METRICS"} {
				resp := rawDo(t, p.Addr, seqRequest(p.Addr, path, "ops", spelled{}), "GET")
				if msg := wharfOwn(resp); msg != "" || resp.status/100 == 2 {
					t.Errorf("GET %s = %d: %s", path, resp.status, msg)
				}
			}
			resp := rawDo(t, p.Addr, seqRequest(p.Addr, "/index.html", "page", spelled{}), "GET")
			if got := resp.header.Get("Content-Security-Policy"); resp.status != 200 || got != hosting.IndexPolicy {
				t.Errorf("GET /index.html = %d with Content-Security-Policy %q, want 200 with %q", resp.status, got, hosting.IndexPolicy)
			}
			// Each stray file beside one of the same kind that is not
			// there: the answers must not tell them apart.
			for file, absent := range map[string]string{
				"bin/26.9.9/engine-26.9.9-linux-amd64.tar.gz": "bin/26.9.8/engine-26.9.8-linux-amd64.tar.gz",
				"bin/26.1.2/stray-26.1.2-linux-amd64.tar.gz":  "bin/26.1.2/gone-26.1.2-linux-amd64.tar.gz",
			} {
				for _, c := range []spelled{{}, {auth: []string{"Basic " + b64(d.secret["full-key"]+":")}}} {
					w := rawDo(t, d.wharf, seqRequest(d.wharf, "/"+file, "stray", c), "GET")
					got := rawDo(t, p.Addr, seqRequest(p.Addr, "/"+file, "stray", c), "GET")
					none := rawDo(t, p.Addr, seqRequest(p.Addr, "/"+absent, "stray", c), "GET")
					if got.status != w.status || w.status != http.StatusNotFound {
						t.Errorf("GET /%s with %q: %d, wharf %d; want 404 from both", file, c.lines(), got.status, w.status)
					}
					// wharf's message names the file or its version.
					gotBody := strings.ReplaceAll(strings.ReplaceAll(string(got.body), file, "FILE"), strings.Split(file, "/")[1], "V")
					noneBody := strings.ReplaceAll(strings.ReplaceAll(string(none.body), absent, "FILE"), strings.Split(absent, "/")[1], "V")
					if got.status != none.status || got.header.Get("Content-Type") != none.header.Get("Content-Type") || gotBody != noneBody {
						t.Errorf("with %q, /%s (there) and /%s (not there) answer apart: %d %q %q, %d %q %q", c.lines(), file, absent,
							got.status, got.header.Get("Content-Type"), got.body, none.status, none.header.Get("Content-Type"), none.body)
					}
				}
			}
			if status := originLogin(t, p.URL(), d.secret["basic-key"]); status/100 != 3 {
				t.Errorf("POST /login through %s with Origin %s = %d, want a redirect (logged in)", name, p.URL(), status)
			}
		})
	}
}

// TestHostingCaddyLinks: Caddy follows a symbolic link added to the tree
// after its configuration was made (it has no setting to refuse them,
// nginx has disable_symlinks), so the check is the operator's, and wharf
// verify TREE must name every link Caddy would serve through: it fails
// while the tree holds one.
func TestHostingCaddyLinks(t *testing.T) {
	testenv.Tool(t, "caddy")
	d := newDiffTree(t)
	caddy := d.proxy(t, "caddy")
	d.addSymlinks(t)
	d.loadFiles(t)
	_, _, err := pubRun(t, "verify", "--key", filepath.Join(d.store, publish.KeyPublicKey), d.store)
	for _, link := range []string{"bin/26.1.2/x.sig", "bin/26.1.2/treasury-cli-26.1.2-macos-amd64.tar.gz", "img/26.1.2/z.sig", "bin/26.1.1/SHA256SUMS.tar.gz"} {
		resp := rawDo(t, caddy.Addr, seqRequest(caddy.Addr, "/"+link, "link", spelled{}), "GET")
		files, _ := d.identify(&resp)
		followed := false
		for _, f := range files {
			followed = followed || !f.public
		}
		if !followed {
			continue
		}
		if err == nil || !strings.Contains(err.Error(), link) {
			t.Errorf("Caddy serves %s through the link %s (%d), and wharf verify does not name it: %v", files[0].name, link, resp.status, err)
		}
	}
}

// originLogin logs in to the page at base as a browser does over plain
// HTTP to a host that is not localhost: the form with its CSRF cookie,
// posted with Origin and no Sec-Fetch-Site (browsers send it only to
// secure origins). It returns the answer's status.
func originLogin(t *testing.T, base, key string) int {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(base + "/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("GET /login = %d without a csrf field", resp.StatusCode)
	}
	form := url.Values{"credential": {key}, "csrf": {html.UnescapeString(string(m[1]))}, "next": {"/"}}
	req, _ := http.NewRequestWithContext(t.Context(), "POST", base+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
