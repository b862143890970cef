package site_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wharfhq/wharf/internal/rpcstatus"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/site"
)

// TestAuthRequest is the endpoint nginx's auth_request and Caddy's
// forward_auth ask: 204, 401 with WWW-Authenticate, or 403 for the
// credentials of the request and the path it names, never a byte of the
// file, and no per-address limit (the proxy asks for all its clients).
func TestAuthRequest(t *testing.T) {
	e := newEnv(t, func(c *site.Config) { c.RateIP, c.BurstIP = 1, 1 })
	basic := "/" + key(t, "26.1.2", "engine", "x86")
	full := "/" + key(t, "26.1.2", "treasury-demo", "arm")
	public := "/" + key(t, "26.1.2", "treasury-cli", "mac")
	keyAuth := func(k string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(k+":")) }
	tests := []struct {
		name   string
		header string // X-Original-URI (nginx) or X-Forwarded-Uri (Caddy)
		path   string
		auth   string
		want   int
	}{
		{"PublicAnonymous", "X-Original-URI", public, "", 204},
		{"BasicAnonymous", "X-Original-URI", basic, "", 401},
		{"BasicKey", "X-Original-URI", basic, keyAuth(e.cr.basicKey), 204},
		{"BasicKeyWithQuery", "X-Original-URI", basic + "?x=1", keyAuth(e.cr.basicKey), 204},
		{"BasicToken", "X-Forwarded-Uri", basic, "Bearer " + e.cr.bob, 204},
		{"FullToken", "X-Forwarded-Uri", full, "Bearer " + e.cr.alice, 204},
		{"ErrBasicKeyFullArtifact", "X-Original-URI", full, keyAuth(e.cr.basicKey), 403},
		{"ErrBasicTokenFullArtifact", "X-Forwarded-Uri", full, "Bearer " + e.cr.bob, 403},
		{"ErrWrongKey", "X-Original-URI", basic, keyAuth(e.cr.basicKey + "x"), 401},
		{"ErrRevokedKey", "X-Original-URI", basic, keyAuth(e.cr.revokedKey), 401},
		// The proxies serve these without asking: a question about one
		// is a client's own header, never a 204.
		{"ErrSigAnonymous", "X-Original-URI", full + ".sig", "", 403},
		{"ErrSigFormAnonymous", "X-Original-URI", full + "/sig", "", 403},
		{"ErrSumsAnonymous", "X-Original-URI", "/bin/26.1.2/SHA256SUMS", "", 403},
		{"ErrPointerAnonymous", "X-Original-URI", "/latest", "", 403},
		{"ErrShortAnonymous", "X-Forwarded-Uri", "/x86/engine", "", 403},
		{"ErrNotPublishedVersion", "X-Original-URI", "/bin/26.9.9/engine-26.9.9-linux-amd64.tar.gz", keyAuth(e.cr.fullKey), 403},
		{"ErrNotADownload", "X-Original-URI", "/bin/26.1.2/.wharf.lock", keyAuth(e.cr.fullKey), 403},
		// A file that is no published download is 404, as a download of
		// it from wharf, except to nginx's auth_request (which passes on
		// 401 and 403 only, and asks again for the answer it sends).
		{"ErrNotPublishedVersionCaddy", "X-Forwarded-Uri", "/bin/26.9.9/engine-26.9.9-linux-amd64.tar.gz", keyAuth(e.cr.fullKey), 404},
		{"ErrNotPublishedNameCaddy", "X-Forwarded-Uri", "/bin/26.1.2/stray-26.1.2-linux-amd64.tar.gz", "", 404},
		{"ErrNotPublishedName", "X-Original-URI", "/bin/26.1.2/stray-26.1.2-linux-amd64.tar.gz", "", 403},
		{"ErrOutsideTree", "X-Original-URI", "/bin/26.1.2/%2e%2e/%2e%2e/etc/passwd", keyAuth(e.cr.fullKey), 403},
		{"ErrNoPath", "", "", keyAuth(e.cr.fullKey), 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := []string{}
			if tt.header != "" {
				hdr = append(hdr, tt.header, tt.path)
			}
			if tt.auth != "" {
				hdr = append(hdr, "Authorization", tt.auth)
			}
			resp, body := get(t, http.MethodGet, e.url+site.AuthPath, hdr...)
			if resp.StatusCode != tt.want {
				t.Fatalf("%s %s = %d, want %d: %s", tt.header, tt.path, resp.StatusCode, tt.want, body)
			}
			switch tt.want {
			case 204:
				if len(body) != 0 {
					t.Errorf("204 with a body of %d bytes", len(body))
				}
			case 401:
				if got := resp.Header.Get("WWW-Authenticate"); got == "" {
					t.Error("401 without WWW-Authenticate")
				}
				fallthrough
			default:
				var er site.Error
				if err := json.Unmarshal(body, &er); err != nil || er.Status != rpcstatus.Code(er.Code).String() {
					t.Errorf("error body %s", body)
				}
				if len(body) > 512 {
					t.Errorf("a body of %d bytes: the file?", len(body))
				}
			}
		})
	}
	// More requests than the per-address limit allows, all answered: the
	// endpoint is asked by a proxy for every client.
	for range 5 {
		resp, _ := get(t, http.MethodGet, e.url+site.AuthPath, "X-Original-URI", public)
		if resp.StatusCode != 204 {
			t.Fatalf("after several asks: %d, want 204 (no per-address limit)", resp.StatusCode)
		}
	}
}

// TestCacheControl: the headers DESIGN fixes, from wharf serve.
func TestCacheControl(t *testing.T) {
	e := newEnv(t)
	kk := "Basic " + base64.StdEncoding.EncodeToString([]byte(e.cr.fullKey+":"))
	tests := []struct {
		path string
		want string
	}{
		{"/" + key(t, "26.1.2", "treasury-cli", "x86"), publish.CacheImmutable},
		{"/" + key(t, "26.1.2", "engine", "x86") + ".sig", publish.CacheImmutable},
		{"/" + key(t, "26.1.2", "engine", "x86") + "/sig", publish.CacheImmutable},
		{"/bin/26.1.2/SHA256SUMS", publish.CacheImmutable},
		{"/" + key(t, "26.1.2", "engine", "x86"), publish.CachePrivate},
		{"/" + key(t, "26.1.2", "treasury-node", "x86"), publish.CachePrivate},
		{"/x86/engine", publish.CacheRevalidate},
		{"/latest", publish.CacheRevalidate},
		{"/preview", publish.CacheRevalidate},
		{"/releases.json", publish.CacheRevalidate},
		{"/install", publish.CacheRevalidate},
		{"/dl.pub", publish.CacheRevalidate},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, _ := get(t, http.MethodHead, e.url+tt.path, "Authorization", kk)
			if resp.StatusCode >= 400 {
				t.Fatalf("HEAD %s: %s", tt.path, resp.Status)
			}
			if got := resp.Header.Get("Cache-Control"); got != tt.want {
				t.Errorf("Cache-Control = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestAuthRequestHeaders: the proxy's subrequest carries the client's own
// headers, so X-Original-URI and X-Forwarded-Uri that differ, or either
// repeated, mean the client wrote one: refused whatever they name.
func TestAuthRequestHeaders(t *testing.T) {
	e := newEnv(t)
	basic := "/" + key(t, "26.1.2", "engine", "x86")
	public := "/" + key(t, "26.1.2", "treasury-cli", "mac")
	tests := []struct {
		name string
		hdr  [][2]string
		want int
	}{
		{"OriginalOnly", [][2]string{{"X-Original-URI", public}}, 204},
		{"ForwardedOnly", [][2]string{{"X-Forwarded-Uri", public}}, 204},
		{"BothEqual", [][2]string{{"X-Original-URI", public}, {"X-Forwarded-Uri", public}}, 204},
		{"ErrBothDiffer", [][2]string{{"X-Original-URI", public}, {"X-Forwarded-Uri", basic}}, 403},
		{"ErrBothDifferPublicSecond", [][2]string{{"X-Original-URI", basic}, {"X-Forwarded-Uri", public}}, 403},
		{"ErrOriginalTwice", [][2]string{{"X-Original-URI", public}, {"X-Original-URI", public}}, 403},
		{"ErrForwardedTwice", [][2]string{{"X-Forwarded-Uri", public}, {"X-Forwarded-Uri", basic}}, 403},
		{"ErrNone", nil, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, e.url+site.AuthPath, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range tt.hdr {
				req.Header.Add(h[0], h[1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("%v = %d, want %d", tt.hdr, resp.StatusCode, tt.want)
			}
		})
	}
}

// TestAuthRequestAudit: the auth endpoint's decision is a download's:
// counted in wharf_downloads_total when allowed for a GET (not a HEAD),
// and written as the same audit record as a download wharf serves itself
// (artifact, build, organisations, key or user, method, status, decision),
// once: nginx's second question for a refusal's body (X-Wharf-Replay) is
// not recorded again.
func TestAuthRequestAudit(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(c *site.Config) { c.Metrics = reg })
	engine := "/" + key(t, "26.1.2", "engine", "arm")
	node := "/" + key(t, "26.1.2", "treasury-node", "x86")
	basicKey := "Basic " + basicAuth(e.cr.basicKey)
	ask := func(path, method, auth string, extra ...string) int {
		hdr := append([]string{"X-Original-URI", path, "X-Original-Method", method}, extra...)
		if auth != "" {
			hdr = append(hdr, "Authorization", auth)
		}
		resp, _ := get(t, http.MethodGet, e.url+site.AuthPath, hdr...)
		return resp.StatusCode
	}
	for _, tt := range []struct {
		path, method, auth string
		extra              []string
		want               int
	}{
		{engine, "GET", basicKey, nil, 204},
		{engine, "GET", basicKey, nil, 204},
		{engine, "HEAD", basicKey, nil, 204},
		{node, "GET", basicKey, nil, 403},
		{node, "GET", basicKey, []string{site.HeaderReplay, "1"}, 403},
		{node, "GET", "Bearer " + e.cr.alice, nil, 204},
		{engine, "GET", "", nil, 401},
	} {
		if got := ask(tt.path, tt.method, tt.auth, tt.extra...); got != tt.want {
			t.Fatalf("%s %s = %d, want %d", tt.method, tt.path, got, tt.want)
		}
	}
	wantDownloads(t, e.url,
		`wharf_downloads_total{artifact="engine",build="arm",org="acme"} 2`,
		`wharf_downloads_total{artifact="treasury-node",build="x86",org="globex"} 1`,
	)
	audit := e.logs.messages(t, "download", 5)
	if len(audit) != 5 {
		t.Fatalf("%d audit records, want 5 (the authenticated questions, the replay not again): %v", len(audit), audit)
	}
	var allowed, refused int
	for _, a := range audit {
		if a["via"] != "proxy" || a["build"] == "" || a["orgs"] == "" || a["id"] == "" || a["artifact"] == "" {
			t.Errorf("audit record %v lacks a field", a)
		}
		switch a["decision"] {
		case "allowed":
			allowed++
		case "refused":
			refused++
			if a["artifact"] != node[1:] || a["orgs"] != "acme" || a["id"] != e.cr.basicKeyID || a["status"] != "403" {
				t.Errorf("refusal record %v", a)
			}
		}
	}
	if allowed != 4 || refused != 1 {
		t.Errorf("%d allowed, %d refused records, want 4 and 1", allowed, refused)
	}
}

// TestAuthRequestCredentialCache: the auth endpoint trusts a checked key
// for CredentialTTL (500 ms) without asking the database; a key
// revoked in the database is refused by every server sharing it once
// that much time has passed, by a server that had not cached it at once,
// and a download wharf serves itself never uses the cache.
func TestAuthRequestCredentialCache(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	k, secret, err := e.cr.db.CreateAPIKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	auth := "Basic " + basicAuth(secret)
	engine := "/" + key(t, "26.1.2", "engine", "arm")
	// A second server over the same database and tree.
	other, _ := serve(t, site.Config{Store: e.store, Auth: e.cr.db, Now: e.clock.Now})
	ask := func(url string) int {
		resp, _ := get(t, http.MethodGet, url+site.AuthPath, "X-Original-URI", engine, "Authorization", auth)
		return resp.StatusCode
	}
	if got := ask(e.url); got != 204 {
		t.Fatalf("a valid key = %d, want 204", got)
	}
	if err := e.cr.db.RevokeAPIKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if got := ask(e.url); got != 204 {
		t.Errorf("just after the revocation, within the TTL: %d, want the cached 204", got)
	}
	if got := ask(other); got != 401 {
		t.Errorf("a server that had not seen the key: %d, want 401", got)
	}
	if resp, _ := get(t, http.MethodGet, e.url+engine, "Authorization", auth); resp.StatusCode != 401 {
		t.Errorf("a download wharf serves itself after the revocation = %d, want 401 at once", resp.StatusCode)
	}
	e.clock.Advance(500 * time.Millisecond)
	if got := ask(e.url); got != 401 {
		t.Errorf("500 ms after the revocation: %d, want 401", got)
	}
	// Refusals are kept as long: an unknown key is not looked up again.
	bad := "Basic " + basicAuth("nope")
	for range 2 {
		if resp, _ := get(t, http.MethodGet, e.url+site.AuthPath, "X-Original-URI", engine, "Authorization", bad); resp.StatusCode != 401 {
			t.Errorf("unknown key = %d, want 401", resp.StatusCode)
		}
	}
}
