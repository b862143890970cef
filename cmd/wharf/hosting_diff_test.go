package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/oci"
	"github.com/wharfhq/wharf/site"
)

// The differential conformance suite of the hosting recipes: a seeded
// generator of request variants sent to wharf serve alone and to the
// nginx and Caddy recipes in front of it, over one tree. It holds every
// proxy to two rules:
//
//  1. never the bytes of a file (whole, a range or a part of a multipart
//     range) that wharf serve would refuse the request's credentials, nor
//     of a file outside the tree; never a 2xx where wharf answers 401 or
//     403;
//  2. where wharf serves a public file (its bytes) or redirects a short
//     URL, the proxy answers in the same family: 200, 206, 304, 412 and
//     416 count as one (each server reads validators and ranges its own
//     way), redirects to the same Location.
//
// WHARF_HOSTING_VARIANTS sets the number of variants per proxy (default
// 2000), WHARF_HOSTING_SEED the seed (default: from the clock); the seed
// is printed with every violation. make fuzz runs it longer.

// diffVariants and diffSeed read the suite's knobs.
func diffVariants(t *testing.T) int {
	n := 2000
	if s := os.Getenv("WHARF_HOSTING_VARIANTS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("WHARF_HOSTING_VARIANTS=%q: want a positive number", s)
		}
		n = v
	}
	return n
}

func diffSeed(t *testing.T) uint64 {
	if s := os.Getenv("WHARF_HOSTING_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("WHARF_HOSTING_SEED=%q: want a number", s)
		}
		return v
	}
	return uint64(time.Now().UnixNano())
}

// level is what a credential may download: anonymous, basic or full.
type level int

const (
	levelAnon level = iota
	levelBasic
	levelFull
)

// diffCred is a credential of the generator.
type diffCred struct {
	name   string
	header []string // header lines it adds
	level  level    // the level wharf gives the request
}

// fileEntry is a file whose bytes a response may carry.
type fileEntry struct {
	name    string // key in the tree, or a path outside it
	data    []byte
	allowed [3]bool // by level: may wharf serve hand it out
	public  bool    // allowed anonymously
}

// diffTree is the tree of the suite: two releases (the connector basic in
// 26.1.1, public from 26.1.2), public, basic and full artifacts, symbolic
// links, and wharf serve over it.
type diffTree struct {
	store   string
	wharf   string // host:port
	creds   []diffCred
	files   []*fileEntry
	bySize  map[int][]*fileEntry
	paths   []string // base request paths
	newConf string
	db      string
	// secret holds each credential's value by name (basic-key, full-key,
	// revoked-key, basic-token, full-token, basic-session, full-session,
	// logged-out-session).
	secret map[string]string
}

// apiKeyID is the id wharf apikey create printed with a key.
func apiKeyID(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`API key (\S+) for`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("apikey create printed no id:\n%s", out)
	}
	return m[1]
}

// newDiffTree publishes the tree and starts wharf serve over it, with
// serveArgs after the suite's own flags (no limits by default).
func newDiffTree(t *testing.T, serveArgs ...string) *diffTree {
	t.Helper()
	dir := t.TempDir()
	d := &diffTree{store: filepath.Join(dir, "public")}
	oldConf, newConf := twoReleaseConfigs(t, dir)
	d.newConf = newConf
	mustRun(t, "keygen", "--out", filepath.Join(dir, "dl.key"))
	// Every artifact with its provenance, the images with an SBOM too.
	mustRun(t, append([]string{"publish", "--version", "26.1.1", "--key", filepath.Join(dir, "dl.key"), "--store", d.store, "--config", oldConf,
		"--base-url", "https://dl.example.com"}, append(provenanceArgs("26.1.1"), attestedInputDir(t, "old"))...)...)
	mustRun(t, append([]string{"publish", "--version", "26.1.2", "--key", filepath.Join(dir, "dl.key"), "--store", d.store, "--config", newConf,
		"--base-url", "https://dl.example.com"}, append(provenanceArgs("26.1.2"), attestedInputDir(t, "new"))...)...)
	db := filepath.Join(dir, "wharf.db")
	mustRun(t, "org", "create", "acme", "--level", "basic", "--db", db)
	mustRun(t, "org", "create", "globex", "--level", "full", "--db", db)
	d.db = db
	basicKey := lastLine(mustRun(t, "apikey", "create", "--org", "acme", "--db", db))
	fullKey := lastLine(mustRun(t, "apikey", "create", "--org", "globex", "--db", db))
	out := mustRun(t, "apikey", "create", "--org", "globex", "--db", db)
	revoked := lastLine(out)
	mustRun(t, "apikey", "revoke", apiKeyID(t, out), "--db", db)
	mustRun(t, "user", "add", "bob", "--org", "acme", "--db", db)
	mustRun(t, "user", "add", "alice", "--org", "globex", "--db", db)
	bob := lastLine(mustRun(t, "token", "create", "--user", "bob", "--db", db))
	alice := lastLine(mustRun(t, "token", "create", "--user", "alice", "--db", db))
	basic := func(s string) string { return "Authorization: Basic " + b64(s) }
	d.creds = []diffCred{
		{"anonymous", nil, levelAnon},
		{"basic-key", []string{basic(basicKey + ":")}, levelBasic},
		{"basic-key-as-password", []string{basic(":" + basicKey)}, levelBasic},
		{"full-key", []string{basic(fullKey + ":")}, levelFull},
		{"revoked-key", []string{basic(revoked + ":")}, levelAnon},
		{"basic-token", []string{"Authorization: Bearer " + bob}, levelBasic},
		{"full-token", []string{"Authorization: Bearer " + alice}, levelFull},
		{"malformed", []string{"Authorization: Basic !!!"}, levelAnon},
		{"other-scheme", []string{"Authorization: Digest " + fullKey}, levelAnon},
		{"full-key-in-cookie", []string{"Cookie: wharf_session=" + fullKey}, levelAnon},
		{"basic-then-full", []string{basic(basicKey + ":"), basic(fullKey + ":")}, levelAnon}, // refused: which one is meant?
		{"revoked-then-full", []string{basic(revoked + ":"), "Authorization: Bearer " + alice}, levelAnon},
	}
	addr := testenv.FreeAddr(t)
	d.wharf = addr
	startServe(t, append([]string{"--store", d.store, "--listen", addr, "--db", db, "--refresh", "0", "--rate-ip", "0", "--rate-key", "0", "--log-level", "error"}, serveArgs...)...)
	// Browser sessions: of a basic and a full key, and one logged out.
	basicSession, _ := diffLogin(t, "http://"+addr, basicKey, false)
	fullSession, _ := diffLogin(t, "http://"+addr, fullKey, false)
	outSession, _ := diffLogin(t, "http://"+addr, fullKey, true)
	d.creds = append(d.creds,
		diffCred{"basic-session", []string{"Cookie: " + site.SessionCookie + "=" + basicSession}, levelBasic},
		diffCred{"full-session", []string{"Cookie: " + site.SessionCookie + "=" + fullSession}, levelFull},
		diffCred{"logged-out-session", []string{"Cookie: " + site.SessionCookie + "=" + outSession}, levelAnon},
	)
	d.secret = map[string]string{"basic-key": basicKey, "full-key": fullKey, "revoked-key": revoked, "basic-token": bob, "full-token": alice,
		"basic-session": basicSession, "full-session": fullSession, "logged-out-session": outSession}
	return d
}

// diffLogin logs in to wharf's page with an API key and returns the
// session cookie's value; logout then logs that session out.
func diffLogin(t *testing.T, base, key string, logout bool) (string, *cookiejar.Jar) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	csrf := func(path string) string {
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
		if m == nil {
			t.Fatalf("GET %s = %d without a csrf field", path, resp.StatusCode)
		}
		return string(m[1])
	}
	post := func(path string, form url.Values) {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 3 {
			t.Fatalf("POST %s = %d, want a redirect", path, resp.StatusCode)
		}
	}
	post("/login", url.Values{"credential": {key}, "csrf": {csrf("/login")}, "next": {"/"}})
	u, _ := url.Parse(base)
	var session string
	for _, ck := range jar.Cookies(u) {
		if ck.Name == site.SessionCookie {
			session = ck.Value
		}
	}
	if session == "" {
		t.Fatal("login set no session cookie")
	}
	if logout {
		post("/logout", url.Values{"csrf": {csrf("/")}})
	}
	return session, jar
}

// addSymlinks puts links into the tree after the proxies' configurations
// were made: one out of the tree under a signature's name, one under a
// public artifact's name to a basic archive, one under a signature's name
// to a full image.
func (d *diffTree) addSymlinks(t *testing.T) {
	t.Helper()
	for link, target := range map[string]string{
		"bin/26.1.2/x.sig": "/etc/passwd",
		"bin/26.1.2/treasury-cli-26.1.2-macos-amd64.tar.gz": "engine-26.1.2-linux-amd64.tar.gz",
		"img/26.1.2/z.sig":             "treasury-node-26.1.2-amd64.tar",
		"bin/26.1.1/SHA256SUMS.tar.gz": "../26.1.2/cord-26.1.2-linux-amd64.tar.gz",
	} {
		if err := os.Symlink(target, filepath.Join(d.store, link)); err != nil {
			t.Fatal(err)
		}
	}
}

// loadFiles reads every file of the tree (a link as what it points to),
// and /etc/passwd, with what wharf serve allows each level: an artifact as
// wharf answers its canonical URL, signatures, checksums and the top of
// the tree to everyone, anything else to no one.
func (d *diffTree) loadFiles(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(d.store, publish.KeyManifest))
	if err != nil {
		t.Fatal(err)
	}
	var man publish.Manifest
	if err := json.Unmarshal(raw, &man); err != nil {
		t.Fatal(err)
	}
	// Artifacts and their attestations: what wharf answers for each level.
	artifacts := map[string]bool{}
	for _, r := range man.Releases {
		for _, a := range r.Artifacts {
			artifacts[a.Key] = true
			for _, at := range a.Attestations {
				artifacts[at.Key] = true
			}
		}
	}
	levelCreds := [3]diffCred{d.creds[0], d.creds[1], d.creds[3]}
	d.files, d.bySize = nil, map[int][]*fileEntry{}
	add := func(f *fileEntry) {
		if len(f.data) == 0 {
			return
		}
		d.files = append(d.files, f)
		d.bySize[len(f.data)] = append(d.bySize[len(f.data)], f)
	}
	err = filepath.WalkDir(d.store, func(path string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		key, _ := filepath.Rel(d.store, path)
		key = filepath.ToSlash(key)
		f := &fileEntry{name: key}
		if de.Type()&fs.ModeSymlink != 0 {
			return nil // its target is a file of its own (or /etc/passwd, below)
		}
		if f.data, err = os.ReadFile(path); err != nil {
			return err
		}
		base := key[strings.LastIndexByte(key, '/')+1:]
		switch {
		case artifacts[key], publish.IsRegistryKey(key):
			for l, c := range levelCreds {
				resp := rawDo(t, d.wharf, "GET /"+key+" HTTP/1.1\r\nHost: "+d.wharf+"\r\n"+headerLines(c.header)+"Connection: close\r\n\r\n", "GET")
				f.allowed[l] = resp.status == 200 && bytes.Equal(resp.body, f.data)
			}
		case !strings.Contains(key, "/") && !strings.HasPrefix(key, "."),
			strings.HasSuffix(key, ".sig"), base == "SHA256SUMS":
			f.allowed = [3]bool{true, true, true}
		}
		f.public = f.allowed[levelAnon]
		add(f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile("/etc/passwd"); err == nil {
		add(&fileEntry{name: "/etc/passwd", data: b})
	}
	// The base paths the generator mutates.
	ps := []string{"/", "/login", "/logout", "/healthz", "/metrics", "/latest", "/preview", "/dl.pub", "/install",
		"/releases.json", "/releases.json.sig", "/channel", "/index.html", "/_redirects", site.AuthPath, "/_wharf/", "/static/page.css", "/etc/passwd",
		"/bin/26.1.2/x.sig", "/bin/26.1.2/treasury-cli-26.1.2-macos-amd64.tar.gz", "/img/26.1.2/z.sig",
		"/bin/26.1.1/SHA256SUMS.tar.gz", "/bin/26.1.2/.wharf.lock", "/bin/26.9.9/engine-26.9.9-linux-amd64.tar.gz",
		"/bin/26.1.2/nope-26.1.2-linux-amd64.tar.gz", "/bin/26.1.2/", "/bin/", "/img/26.1.2"}
	for _, r := range man.Releases {
		for _, dir := range []string{"bin", "img"} {
			ps = append(ps, "/"+dir+"/"+r.Version+"/SHA256SUMS", "/"+dir+"/"+r.Version+"/SHA256SUMS.sig", "/"+dir+"/"+r.Version+"/SHA256SUMS/sig")
		}
		for _, a := range r.Artifacts {
			ps = append(ps, "/"+a.Key, "/"+a.Key, "/"+a.Key, "/"+a.Key+".sig", "/"+a.Key+"/sig")
			for _, at := range a.Attestations {
				ps = append(ps, "/"+at.Key, "/"+at.Key+"/sig")
			}
		}
	}
	// The registry's read API: what its tree holds, by the paths a client
	// asks (wharf answers /v2/ behind both recipes).
	ps = append(ps, "/v2/", "/v2", "/v2/_catalog", "/v2/nope/manifests/latest", "/v2/treasury-node/tags/list", "/v2/treasury-node/blobs/", "/v2/../v2/")
	for _, r := range man.Releases {
		for _, im := range r.Images {
			for _, ref := range []string{r.Version, "latest", "preview", im.Index, oci.SignatureTag(im.Index)} {
				ps = append(ps, "/"+publish.RegistryManifestKey(im.Name, ref))
			}
			for _, pl := range im.Platforms {
				ps = append(ps, "/"+publish.RegistryManifestKey(im.Name, pl.Manifest))
			}
		}
	}
	for _, f := range d.files {
		if publish.IsRegistryKey(f.name) {
			ps = append(ps, "/"+f.name)
		}
	}
	for _, b := range []string{"x86", "arm", "mac", "macos"} {
		for _, n := range []string{"engine", "connector", "treasury-cli", "treasury-node", "treasury-demo", "nope"} {
			for _, tag := range []string{"", "/latest", "/preview", "/26.1.1", "/26.1.2", "/26.9.9"} {
				ps = append(ps, tag+"/"+b+"/"+n, tag+"/"+b+"/"+n+"/sig")
			}
		}
	}
	d.paths = ps
}

// identify lists the files whose bytes a 2xx response carries: the whole
// body, or each range of a 206 (single or multipart).
func (d *diffTree) identify(r *rawResponse) (files []*fileEntry, spans int) {
	match := func(contentRange string, body []byte) {
		var a, b, n int
		if _, err := fmt.Sscanf(contentRange, "bytes %d-%d/%d", &a, &b, &n); err != nil || b < a || b-a+1 != len(body) {
			return
		}
		spans++
		for _, f := range d.bySize[n] {
			if bytes.Equal(f.data[a:b+1], body) {
				files = append(files, f)
			}
		}
	}
	switch {
	case len(r.body) == 0:
	case r.status == http.StatusPartialContent && r.header.Get("Content-Range") != "":
		match(r.header.Get("Content-Range"), r.body)
	case r.status == http.StatusPartialContent:
		_, params, err := mime.ParseMediaType(r.header.Get("Content-Type"))
		if err != nil || params["boundary"] == "" {
			return nil, 0
		}
		mr := multipart.NewReader(bytes.NewReader(r.body), params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(p)
			match(p.Header.Get("Content-Range"), b)
		}
	default:
		spans = 1
		for _, f := range d.bySize[len(r.body)] {
			if bytes.Equal(f.data, r.body) {
				files = append(files, f)
			}
		}
	}
	return files, spans
}

// variant is one generated request.
type variant struct {
	method, target, proto string
	lines                 []string // header lines, without Host and Connection
	host                  bool     // send a Host header
	cred                  *diffCred
	// malformed: a request a server may refuse as a whole (a header
	// repeated that may not be, another protocol, no Host in HTTP/1.1,
	// framing headers); rule 2 does not hold for it, rule 1 does.
	malformed bool
	body      string // sent after the header (a chunked body's end)
}

// raw is the request as bytes for a server at addr.
func (v variant) raw(addr string) string {
	var b strings.Builder
	b.WriteString(v.method + " " + strings.ReplaceAll(v.target, "HOST", addr) + " " + v.proto + "\r\n")
	if v.host {
		b.WriteString("Host: " + addr + "\r\n")
	}
	b.WriteString(headerLines(v.lines))
	b.WriteString(headerLines(v.cred.header))
	b.WriteString("Connection: close\r\n\r\n")
	b.WriteString(v.body)
	return b.String()
}

func (v variant) String() string {
	return fmt.Sprintf("%s %q %s, %s, headers %q", v.method, v.target, v.proto, v.cred.name, v.lines)
}

func headerLines(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l + "\r\n")
	}
	return b.String()
}

// pick returns one of xs.
func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// mutate spells path another way: percent-encodings (of letters, dots,
// slashes, '?', '#'), double slashes, dot segments, a query, a trailing
// piece, a case change, double encoding, an absolute form, backslashes.
func mutate(r *rand.Rand, p string) string {
	pos := func(s string) int {
		if len(s) <= 1 {
			return len(s)
		}
		return 1 + r.IntN(len(s)-1)
	}
	slashAt := func(s string) int {
		var idx []int
		for i := 1; i < len(s); i++ {
			if s[i] == '/' {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			return -1
		}
		return pick(r, idx...)
	}
	switch r.IntN(16) {
	case 0, 1: // percent-encode a character, upper or lower hex
		i := pos(p)
		if i >= len(p) {
			return p
		}
		enc := fmt.Sprintf("%%%02X", p[i])
		if r.IntN(2) == 0 {
			enc = strings.ToLower(enc)
		}
		return p[:i] + enc + p[i+1:]
	case 2: // an encoded slash
		if i := slashAt(p); i > 0 {
			return p[:i] + pick(r, "%2F", "%2f", "%5C", "%5c") + p[i+1:]
		}
	case 3: // a double slash
		if i := slashAt(p); i > 0 {
			return p[:i] + "/" + p[i:]
		}
		return "/" + p
	case 4: // a dot segment
		if i := slashAt(p); i > 0 {
			return p[:i] + pick(r, "/.", "/./.", "/x/..", "/%2e", "/%2E%2e/"+strings.TrimPrefix(p[:i], "/"), "/bin/..", "/..", "/.%2e", "/%c0%ae") + p[i:]
		}
	case 5: // something that a decoder reads as a query or fragment before /sig
		if strings.HasSuffix(p, "/sig") {
			return strings.TrimSuffix(p, "/sig") + pick(r, "%3F", "%3f", "%23", "?", "%3F.sig", "%2F..") + "/sig"
		}
		return p + pick(r, "%3F/sig", "%3f.sig", "%23/sig", "?/sig", "/sig", ".sig")
	case 6: // a query
		return p + pick(r, "?", "?x=1", "?/sig", "?../../etc/passwd", "?download=1&sig", "??")
	case 7: // a trailing piece
		return p + pick(r, "/", "/.", "%20", "%00", "\\", "%5c", ";x", ";", "%2F", "#x", "%09", ".", "~", "%2e", "/sig/sig")
	case 8: // a case change
		i := pos(p)
		if i >= len(p) {
			return p
		}
		return p[:i] + strings.ToUpper(p[i:i+1]) + p[i+1:]
	case 9: // double encoding
		i := pos(p)
		if i >= len(p) {
			return p
		}
		return p[:i] + fmt.Sprintf("%%25%02X", p[i]) + p[i+1:]
	case 10: // absolute form
		return "http://HOST" + p
	case 11: // a backslash for a slash
		if i := slashAt(p); i > 0 {
			return p[:i] + "\\" + p[i+1:]
		}
	case 12: // a leading oddity
		return pick(r, "//", "/./", "/%2F", "/%2e/", "/x/../", "/bin/../") + strings.TrimPrefix(p, "/")
	case 13: // a cut: a prefix of the path
		if len(p) > 2 {
			return p[:pos(p)]
		}
	case 14: // a parameter in a segment
		if i := slashAt(p); i > 0 {
			return p[:i] + ";v=1" + p[i:]
		}
	case 15: // another public name's tail
		return p + pick(r, "/../treasury-cli-26.1.2-linux-amd64.tar.gz", "%2F..%2Ftreasury-cli-26.1.2-linux-amd64.tar.gz", "/../../latest", "%00.sig", ".sig%00", "/.sig")
	}
	return p
}

// generate makes the next variant of r's sequence.
func (d *diffTree) generate(r *rand.Rand) variant {
	v := variant{method: "GET", proto: "HTTP/1.1", host: true}
	v.target = pick(r, d.paths...)
	for n := pick(r, 0, 0, 1, 1, 1, 2, 2, 3); n > 0; n-- {
		v.target = mutate(r, v.target)
	}
	switch x := r.IntN(20); {
	case x < 12:
	case x < 15:
		v.method = "HEAD"
	default:
		v.method = pick(r, "POST", "PUT", "DELETE", "OPTIONS", "TRACE", "PATCH", "PROPFIND", "get", "GET ", "MKCOL")
	}
	switch x := r.IntN(40); {
	case x < 34:
	case x < 36:
		v.proto = "HTTP/1.0"
	case x < 38:
		v.proto, v.host = "HTTP/1.0", false
	case x < 39:
		v.host = false
	default:
		v.proto = pick(r, "HTTP/1.2", "HTTP/0.9", "http/1.1")
	}
	publicPath := pick(r, "/latest", "/bin/26.1.2/treasury-cli-26.1.2-linux-amd64.tar.gz", "/bin/26.1.2/engine-26.1.2-linux-amd64.tar.gz/sig",
		"/bin/26.1.2/engine-26.1.2-linux-amd64.tar.gz.sig", "/x86/engine", "/", "/bin/26.1.2/SHA256SUMS")
	if r.IntN(3) == 0 {
		// Headers that name another request: a proxy's own, or ones
		// other servers read.
		for n := 1 + r.IntN(3); n > 0; n-- {
			h := pick(r, site.HeaderOriginalURI, site.HeaderForwardURI, "X-Rewrite-URL", "X-Original-URL", "X-Forwarded-Prefix",
				"X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-For", site.HeaderReplay, "X-HTTP-Method-Override",
				"X-Original-Method", "X-Forwarded-Method", "X-Accel-Redirect", "X-Sendfile")
			val := publicPath
			switch h {
			case "X-Forwarded-Host":
				val = "dl.example.com"
			case "X-Forwarded-Proto":
				val = "https"
			case "X-Forwarded-For":
				val = "6.6.6.6"
			case site.HeaderReplay:
				val = "1"
			case "X-HTTP-Method-Override", "X-Original-Method", "X-Forwarded-Method":
				val = pick(r, "GET", "HEAD", "DELETE")
			}
			v.lines = append(v.lines, h+": "+val)
		}
	}
	if r.IntN(4) == 0 {
		v.lines = append(v.lines, "Range: "+pick(r, "bytes=0-9", "bytes=10-", "bytes=-20", "bytes=0-0,5-9", "bytes=0-3,2-8",
			"bytes=100000-", "bytes=5-2", "bytes=abc", "bytes=-0", "bytes=0-", "items=0-1", "bytes=0-9, 20-29, 40-49"))
		if r.IntN(3) == 0 {
			v.lines = append(v.lines, "If-Range: "+pick(r, `"x"`, "Wed, 01 Jan 2020 00:00:00 GMT", "Fri, 01 Jan 2100 00:00:00 GMT"))
		}
	}
	if r.IntN(6) == 0 {
		v.lines = append(v.lines, pick(r, "If-None-Match: *", `If-None-Match: "x"`, "If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT",
			"If-Modified-Since: Wed, 01 Jan 2020 00:00:00 GMT", "If-Unmodified-Since: Wed, 01 Jan 2020 00:00:00 GMT",
			`If-Match: "x"`, "If-Match: *"))
	}
	if r.IntN(10) == 0 {
		h := pick(r, "Accept-Encoding: gzip", "Expect: 100-continue", "Transfer-Encoding: chunked",
			"Content-Length: 0", "Upgrade: h2c", "Max-Forwards: 0", "Forwarded: for=6.6.6.6;host=dl.example.com;proto=https")
		v.lines = append(v.lines, h)
		switch h {
		case "Transfer-Encoding: chunked":
			v.body, v.malformed = "0\r\n\r\n", true
		case "Expect: 100-continue", "Upgrade: h2c":
			v.malformed = true
		}
	}
	v.cred = &d.creds[pick(r, 0, 0, 0, 0, 1, 1, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 8, 9, 10, 11)%len(d.creds)]
	if len(d.creds) > 12 && r.IntN(5) == 0 {
		v.cred = &d.creds[12+r.IntN(len(d.creds)-12)] // the sessions
	}
	if strings.HasPrefix(v.target, "http://") && !strings.HasPrefix(v.target, "http://HOST/") {
		v.malformed = true // a mangled host in the absolute form
	}
	if len(v.cred.header) > 1 || v.proto != "HTTP/1.1" && v.proto != "HTTP/1.0" || !v.host && v.proto == "HTTP/1.1" {
		v.malformed = true
	}
	return v
}

// rawResponse is what a server answered on the wire.
type rawResponse struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// rawDo sends req on a new connection to addr and reads one response.
func rawDo(t *testing.T, addr, req, method string) rawResponse {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		return rawResponse{err: err}
	}
	if method != "HEAD" {
		method = "GET"
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 {
		resp, err = http.ReadResponse(br, &http.Request{Method: method}) // 100 Continue
	}
	if err != nil {
		return rawResponse{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: body, err: err}
}

// family groups statuses for rule 2: serving a file (whatever the
// validators and ranges made of it), redirecting, or the class.
func family(status int) string {
	switch status {
	case 200, 206, 304, 412, 416:
		return "served"
	case 301, 302, 303, 307, 308:
		return "redirect"
	}
	return strconv.Itoa(status/100) + "xx"
}

// diffStats counts what a run saw.
type diffStats struct {
	sent, leaksChecked, publicChecked, wharf2xx, proxy2xx int
	// granted counts, by credential, proxy answers with the bytes of a
	// non-public file (allowed to that credential): the generator's reach.
	granted map[string]int
}

// check applies the two rules to one variant's answers; it returns the
// violations.
func (d *diffTree) check(v variant, w, p rawResponse, st *diffStats) []string {
	var out []string
	if p.status/100 == 2 {
		st.proxy2xx++
		if w.status == http.StatusUnauthorized || w.status == http.StatusForbidden {
			out = append(out, fmt.Sprintf("proxy %d where wharf refuses %d", p.status, w.status))
		}
		files, spans := d.identify(&p)
		if spans > 0 {
			st.leaksChecked++
		}
		leak := len(files) > 0
		for _, f := range files {
			if f.allowed[v.cred.level] {
				leak = false
				if !f.public && st.granted != nil {
					st.granted[v.cred.name]++
				}
			}
		}
		if leak {
			names := make([]string, len(files))
			for i, f := range files {
				names[i] = f.name
			}
			out = append(out, fmt.Sprintf("proxy %d with the bytes of %v, which wharf refuses %s", p.status, names, v.cred.name))
		}
	}
	if msg := wharfOwn(p); msg != "" {
		out = append(out, msg)
	}
	if w.status/100 == 2 {
		st.wharf2xx++
	}
	if v.malformed {
		return out
	}
	switch family(w.status) {
	case "served":
		files, _ := d.identify(&w)
		public := false
		for _, f := range files {
			public = public || f.public
		}
		if public {
			st.publicChecked++
			if family(p.status) != "served" {
				out = append(out, fmt.Sprintf("wharf serves a public file (%d), the proxy answers %d", w.status, p.status))
			}
		}
	case "redirect":
		st.publicChecked++
		if family(p.status) != "redirect" || p.header.Get("Location") != w.header.Get("Location") {
			out = append(out, fmt.Sprintf("wharf redirects (%d to %q), the proxy answers %d to %q", w.status, w.header.Get("Location"), p.status, p.header.Get("Location")))
		}
	}
	return out
}

// wharfOwn says how a proxy's answer is one of wharf's operational
// endpoints' (rule 3), or "": the auth endpoint's 204 (nothing a proxy
// serves is one), /metrics' series, /healthz's report.
func wharfOwn(p rawResponse) string {
	switch {
	case p.status == http.StatusNoContent:
		return "proxy 204: the auth endpoint's answer reached the client"
	case p.status/100 != 2:
		return ""
	case bytes.Contains(p.body, []byte("# TYPE wharf_")):
		return "proxy 2xx with wharf's /metrics"
	case bytes.Contains(p.body, []byte(`{"status":"ok"`)):
		return "proxy 2xx with wharf's /healthz"
	}
	return ""
}

// runDiff sends n variants of the seed to wharf and to each proxy, four
// at a time, and fails t with every violation (the seed first).
func (d *diffTree) runDiff(t *testing.T, seed uint64, n int, proxies map[string]*testenv.Proxy) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	vs := make([]variant, n)
	for i := range vs {
		vs[i] = d.generate(r)
	}
	stats := map[string]*diffStats{}
	for name := range proxies {
		stats[name] = &diffStats{granted: map[string]int{}}
	}
	var mu sync.Mutex
	var violations []string
	next := make(chan int)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				v := vs[i]
				w := rawDo(t, d.wharf, v.raw(d.wharf), v.method)
				for name, p := range proxies {
					pr := rawDo(t, p.Addr, v.raw(p.Addr), v.method)
					mu.Lock()
					st := stats[name]
					st.sent++
					for _, msg := range d.check(v, w, pr, st) {
						violations = append(violations, fmt.Sprintf("%s, variant %d (%s): %s (wharf %d, %d bytes; %s %d, %d bytes)",
							name, i, v, msg, w.status, len(w.body), name, pr.status, len(pr.body)))
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range vs {
		next <- i
	}
	close(next)
	wg.Wait()
	for name, st := range stats {
		t.Logf("%s: %d variants (seed %d), %d answered 2xx by the proxy (%d with the bytes of a known file checked), %d by wharf; %d public answers compared",
			name, st.sent, seed, st.proxy2xx, st.leaksChecked, st.wharf2xx, st.publicChecked)
		t.Logf("%s: non-public files served, by credential: %v", name, st.granted)
		if st.leaksChecked == 0 || st.publicChecked == 0 {
			t.Errorf("%s: the generator checked no leak or no public answer", name)
		}
	}
	if len(violations) > 0 {
		const max = 40
		shown := violations
		if len(shown) > max {
			shown = shown[:max]
		}
		t.Errorf("seed %d (WHARF_HOSTING_SEED=%d reruns it): %d violations:\n%s", seed, seed, len(violations), strings.Join(shown, "\n"))
	}
}

// proxy starts nginx or Caddy as wharf hosting configures them for the
// tree (nginx: its caches in temporary directories, no access log and no
// limit of its own unless extra says so).
func (d *diffTree) proxy(t *testing.T, kind string, extra ...string) *testenv.Proxy {
	t.Helper()
	addr := testenv.FreeAddr(t)
	args := []string{"hosting", kind, "--root", d.store, "--upstream", "http://" + d.wharf, "--listen", addr, "--config", d.newConf}
	if kind == "nginx" {
		args = append(args, "--cache-dir", filepath.Join(t.TempDir(), "cache"), "--auth-cache", filepath.Join(t.TempDir(), "auth"), "--access-log", "off", "--rate-key", "0")
		return testenv.NewNginx(t, addr, mustRun(t, append(args, extra...)...))
	}
	return testenv.NewCaddy(t, addr, mustRun(t, append(args, extra...)...))
}

// TestHostingDifferential is the differential conformance suite against
// the real nginx and Caddy. Caddy runs over the tree as wharf hosting
// caddy accepts it (no symbolic link: it refuses to print a configuration
// for a tree that holds one, which is checked here); nginx then over the
// same tree with links added after its configuration was made.
func TestHostingDifferential(t *testing.T) {
	testenv.Tool(t, "nginx")
	testenv.Tool(t, "caddy")
	d := newDiffTree(t)
	n, seed := diffVariants(t), diffSeed(t)
	t.Logf("seed %d, %d variants per proxy (WHARF_HOSTING_SEED, WHARF_HOSTING_VARIANTS)", seed, n)
	proxy := func(kind string, extra ...string) *testenv.Proxy { return d.proxy(t, kind, extra...) }
	// Each proxy twice: asking wharf for latest and preview short URLs,
	// and with them written in (--pin-latest).
	caddy, caddyPinned := proxy("caddy"), proxy("caddy", "--pin-latest")
	nginx, nginxPinned := proxy("nginx"), proxy("nginx", "--pin-latest")
	d.loadFiles(t)
	t.Run("caddy", func(t *testing.T) {
		d.runDiff(t, seed, n, map[string]*testenv.Proxy{"caddy": caddy, "caddy-pinned": caddyPinned})
	})
	d.addSymlinks(t)
	d.loadFiles(t)
	if _, _, err := pubRun(t, "hosting", "caddy", "--root", d.store, "--upstream", "http://"+d.wharf); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("wharf hosting caddy over a tree with links: err = %v, want a refusal", err)
	}
	t.Run("nginx", func(t *testing.T) {
		d.runDiff(t, seed+1, n, map[string]*testenv.Proxy{"nginx": nginx, "nginx-pinned": nginxPinned})
	})
}
