package site_test

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/dir"
	"github.com/wharfhq/wharf/site"
	"github.com/wharfhq/wharf/site/auth"
)

const (
	pageBasicKey = "wk_basic-key-for-tests"
	pageFullKey  = "wk_full-key-for-tests"
	// pageToken looks like a JWT, so the form takes it for an access token.
	pageToken = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhZGEifQ.c2ln"
)

var pageSecret = []byte("0123456789abcdef0123456789abcdef-test-secret")

// pageEnv is the page mounted in the download server on an httptest
// server, with a fake Authenticator and a hand-moved clock.
type pageEnv struct {
	tree  *pageTree
	auth  *pageAuth
	clock *testenv.Clock
	page  *site.Page
	srv   *httptest.Server
}

func newPageEnv(t *testing.T) *pageEnv {
	t.Helper()
	e := &pageEnv{tree: newPageTree(t), auth: newPageAuth(), clock: testenv.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))}
	e.auth.add(pageBasicKey, site.Principal{Kind: "apikey", Name: "k-basic", Orgs: []string{"acme"}, Level: site.LevelBasic})
	e.auth.add(pageFullKey, site.Principal{Kind: "apikey", Name: "k-full", Orgs: []string{"bigco"}, Level: site.LevelFull})
	e.auth.add(pageToken, site.Principal{Kind: "user", Name: "ada", Orgs: []string{"acme"}, Level: site.LevelBasic, Expires: e.clock.Now().Add(2 * time.Hour)})
	page, err := site.NewPage(site.PageConfig{
		Store:  e.tree.Store,
		Auth:   e.auth,
		Secret: pageSecret,
		Now:    e.clock.Now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.page = page
	srv, err := site.New(site.Config{
		Store:    e.tree.Store,
		Auth:     e.auth,
		Sessions: page,
		Page:     page,
		Now:      e.clock.Now,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(srv)
	t.Cleanup(e.srv.Close)
	return e
}

// client is a browser-like client: a cookie jar, no redirects followed.
func (e *pageEnv) client(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (e *pageEnv) get(t *testing.T, c *http.Client, path string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, pageBody(t, resp.Body)
}

func (e *pageEnv) post(t *testing.T, c *http.Client, path string, form url.Values, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, pageBody(t, resp.Body)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf loads a page with a form and returns its CSRF token.
func (e *pageEnv) csrf(t *testing.T, c *http.Client, path string) string {
	t.Helper()
	_, body := e.get(t, c, path)
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("GET %s has no CSRF field:\n%s", path, body)
	}
	return html.UnescapeString(m[1])
}

// login logs c in with cred and returns the response to the form.
func (e *pageEnv) login(t *testing.T, c *http.Client, cred, next string) *http.Response {
	t.Helper()
	tok := e.csrf(t, c, "/login")
	resp, _ := e.post(t, c, "/login", url.Values{"csrf": {tok}, "credential": {cred}, "next": {next}})
	return resp
}

func sessionCookie(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == site.SessionCookie {
			return c
		}
	}
	return nil
}

func TestPageLists(t *testing.T) {
	e := newPageEnv(t)
	resp, body := e.get(t, e.client(t), "/")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET / = %d", resp.StatusCode)
	}
	for h, want := range map[string]string{
		"Content-Type":  "text/html; charset=utf-8",
		"Cache-Control": "no-store",
	} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	// Every file of the latest release and preview is listed with its size,
	// SHA-256 and signature link; the older release only in the picker.
	for _, v := range []string{e.tree.Latest, e.tree.Preview} {
		r, _ := e.tree.Manifest.Find(v)
		for _, a := range r.Artifacts {
			for _, want := range []string{
				`data-file="` + a.FileName() + `"`,
				a.SHA256,
				`href="/` + a.Key + `/sig"`,
				`title="` + strconv.FormatInt(a.Size, 10) + ` bytes"`,
			} {
				if !strings.Contains(body, want) {
					t.Errorf("the page lacks %s", want)
				}
			}
		}
	}
	if strings.Contains(body, `data-file="engine-25.4.2`) {
		t.Error("the page lists the files of an older release")
	}
	for _, want := range []string{
		`<option value="25.4.2">25.4.2</option>`,
		`curl -fsSL ` + e.srv.URL + `/install | binary=engine version=26.1.1 sh`,
		`openssl dgst -sha256 -verify dl.pub -signature &lt;(base64 -d engine-26.1.1-linux-amd64.tar.gz.sig) engine-26.1.1-linux-amd64.tar.gz`,
		`href="/bin/26.1.1/treasury-cli-26.1.1-linux-amd64.tar.gz" data-link="download"`,
		`href="/login?next=%2Fbin%2F26.1.1%2Fengine-26.1.1-linux-amd64.tar.gz" data-link="login"`,
		`href="/login" id="login"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}

	t.Run("VersionPicker", func(t *testing.T) {
		_, body := e.get(t, e.client(t), "/?version=25.4.2")
		if !strings.Contains(body, `data-file="engine-25.4.2-linux-arm64.tar.gz"`) || strings.Contains(body, `data-file="engine-26.1.1`) {
			t.Error("?version=25.4.2 does not show exactly that release")
		}
		if !strings.Contains(body, `<option value="25.4.2" selected>`) {
			t.Error("the picker does not select the chosen version")
		}
		_, body = e.get(t, e.client(t), "/?version=%3Cb%3E")
		if !strings.Contains(body, "Version &lt;b&gt; is not published") {
			t.Error("an unknown version is not reported (escaped)")
		}
	})

	t.Run("Stylesheet", func(t *testing.T) {
		resp, css := e.get(t, e.client(t), "/static/page.css")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/css; charset=utf-8" || !strings.Contains(css, ":focus-visible") {
			t.Errorf("GET /static/page.css = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	})
}

func TestPageMacOS(t *testing.T) {
	e := newPageEnv(t)
	tests := []struct {
		name, ua string
		first    bool
	}{
		{"Mac", "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 Safari/605.1.15", true},
		{"Linux", "Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0 Safari/537.36", false},
		{"iPhone", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Safari/604.1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, body := e.get(t, e.client(t), "/", "User-Agent", tt.ua)
			mac, release := strings.Index(body, `id="macos"`), strings.Index(body, `class="release"`)
			if mac < 0 || !strings.Contains(body, "xattr -d com.apple.quarantine") {
				t.Fatal("no quarantine note")
			}
			if got := mac < release; got != tt.first {
				t.Errorf("quarantine note before the releases = %v, want %v", got, tt.first)
			}
		})
	}
}

func TestPageLogin(t *testing.T) {
	next := "/bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz"
	t.Run("APIKey", func(t *testing.T) {
		e := newPageEnv(t)
		c := e.client(t)
		if resp, _ := e.get(t, c, next); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("download before login = %d, want 401", resp.StatusCode)
		}
		resp := e.login(t, c, pageBasicKey, next)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != next {
			t.Fatalf("login = %d to %q, want 303 to %s", resp.StatusCode, resp.Header.Get("Location"), next)
		}
		ck := sessionCookie(resp)
		if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Path != "/" || ck.Secure {
			t.Fatalf("session cookie = %+v, want HttpOnly, SameSite=Lax, Path=/, not Secure over http", ck)
		}
		if ck.MaxAge <= 0 || ck.MaxAge > int((8*time.Hour)/time.Second) {
			t.Errorf("API key session Max-Age = %d, want at most 8 h", ck.MaxAge)
		}
		resp, body := e.get(t, c, next)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(body, "engine 26.1.1 x86") {
			t.Fatalf("download after login = %d", resp.StatusCode)
		}
		if resp, _ := e.get(t, c, "/img/26.1.1/treasury-node-26.1.1-amd64.tar"); resp.StatusCode != http.StatusForbidden {
			t.Errorf("full artifact for a basic org = %d, want 403", resp.StatusCode)
		}
		_, body = e.get(t, c, "/")
		for _, want := range []string{
			"Logged in with the API key <strong>k-basic</strong> of acme (level basic).",
			`<strong id="allowed">public, basic</strong>`,
			`href="/bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz" data-link="download"`,
			`>Needs full access<`,
			`id="logout"`,
			// The install line of a binary that needs a login has the
			// placeholder of the session's credential; a public one none.
			`binary=engine version=26.1.1 api_key=API_KEY sh`,
			`binary=treasury-cli version=26.1.1 sh`,
			"Replace <code>API_KEY</code> with your organisation's API key.",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("the page after login lacks %s", want)
			}
		}
	})

	t.Run("TokenLifetime", func(t *testing.T) {
		e := newPageEnv(t)
		c := e.client(t)
		resp := e.login(t, c, pageToken, "")
		ck := sessionCookie(resp)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" || ck == nil {
			t.Fatalf("token login = %d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		if ck.MaxAge > int((2*time.Hour)/time.Second) {
			t.Errorf("token session Max-Age = %d, outlives the token (2 h)", ck.MaxAge)
		}
		_, body := e.get(t, c, "/")
		for _, want := range []string{
			`binary=engine version=26.1.1 token=ACCESS_TOKEN sh`,
			`curl -fsSL -H &#34;Authorization: Bearer ACCESS_TOKEN&#34; -o engine-26.1.1-linux-amd64.tar.gz`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("the page of a token session lacks %s", want)
			}
		}
	})

	t.Run("TokenCappedAtADay", func(t *testing.T) {
		e := newPageEnv(t)
		e.auth.add("eyJ.long.lived", site.Principal{Kind: "user", Name: "bob", Level: site.LevelBasic, Expires: e.clock.Now().Add(72 * time.Hour)})
		ck := sessionCookie(e.login(t, e.client(t), "eyJ.long.lived", ""))
		if ck == nil || ck.MaxAge > 24*3600 {
			t.Errorf("token session = %+v, want at most 24 h", ck)
		}
	})

	t.Run("SecureBehindTLSProxy", func(t *testing.T) {
		e := newPageEnv(t)
		c := e.client(t)
		tok := e.csrf(t, c, "/login")
		resp, _ := e.post(t, c, "/login", url.Values{"csrf": {tok}, "credential": {pageBasicKey}}, "X-Forwarded-Proto", "https")
		if ck := sessionCookie(resp); ck == nil || !ck.Secure {
			t.Errorf("session cookie over X-Forwarded-Proto https = %+v, want Secure", ck)
		}
	})
}

func TestPageLoginRefused(t *testing.T) {
	tests := []struct {
		name   string
		form   func(csrf string) url.Values
		header []string
		status int
		msg    string
	}{
		{"WrongKey", func(c string) url.Values { return url.Values{"csrf": {c}, "credential": {"wk_nope"}} }, nil,
			http.StatusUnauthorized, "That access token or API key was not accepted."},
		{"WrongToken", func(c string) url.Values { return url.Values{"csrf": {c}, "credential": {"eyJ.bad.token"}} }, nil,
			http.StatusUnauthorized, "That access token or API key was not accepted."},
		{"ExpiredToken", func(c string) url.Values { return url.Values{"csrf": {c}, "credential": {pageExpiredToken}} }, nil,
			http.StatusUnauthorized, "That access token expired at 2026-12-01T09:30:00Z (tokens last 24 hours). Get a new one (treasury token create), or log in with an API key."},
		{"KeyOfAnotherKind", func(c string) url.Values { return url.Values{"csrf": {c}, "credential": {pageBasicKey + "x"}} }, nil,
			http.StatusUnauthorized, "That access token or API key was not accepted."},
		{"Empty", func(c string) url.Values { return url.Values{"csrf": {c}, "credential": {"  "}} }, nil,
			http.StatusBadRequest, "Paste an access token or an API key."},
		{"NoCSRFToken", func(string) url.Values { return url.Values{"credential": {pageBasicKey}} }, nil,
			http.StatusForbidden, "The form expired"},
		{"ForgedCSRFToken", func(string) url.Values {
			return url.Values{"csrf": {"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, "credential": {pageBasicKey}}
		}, nil, http.StatusForbidden, "The form expired"},
		{"CrossSite", func(c string) url.Values { return url.Values{"csrf": {c}, "credential": {pageBasicKey}} },
			[]string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden, "The form expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newPageEnv(t)
			c := e.client(t)
			tok := e.csrf(t, c, "/login")
			resp, body := e.post(t, c, "/login", tt.form(tok), tt.header...)
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.status)
			}
			if !strings.Contains(body, tt.msg) {
				t.Errorf("the form does not say %q:\n%s", tt.msg, body)
			}
			if sessionCookie(resp) != nil {
				t.Error("a refused login set a session cookie")
			}
		})
	}

	t.Run("CSRFTokenOfAnotherBrowser", func(t *testing.T) {
		e := newPageEnv(t)
		theirs := e.csrf(t, e.client(t), "/login")
		c := e.client(t)
		e.csrf(t, c, "/login")
		resp, _ := e.post(t, c, "/login", url.Values{"csrf": {theirs}, "credential": {pageBasicKey}})
		if resp.StatusCode != http.StatusForbidden || sessionCookie(resp) != nil {
			t.Errorf("login with another browser's CSRF token = %d", resp.StatusCode)
		}
	})

	t.Run("AuthenticatorDown", func(t *testing.T) {
		e := newPageEnv(t)
		e.auth.setErr(errors.New("database is locked"))
		c := e.client(t)
		resp := e.login(t, c, pageBasicKey, "")
		if resp.StatusCode != http.StatusServiceUnavailable || sessionCookie(resp) != nil {
			t.Errorf("login with the database down = %d", resp.StatusCode)
		}
	})
}

func TestPageNext(t *testing.T) {
	tests := []struct {
		next, location string
	}{
		{"/bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz", "/bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz"},
		{"/x86/engine", "/x86/engine"},
		{"//evil.example", "/"},
		{"https://evil.example/", "/"},
		{"http:/evil.example", "/"},
		{`/\evil.example`, "/"},
		{"/%2F%2Fevil.example", "/"},
		{"%2F%2Fevil.example", "/"},
		{"/%5Cevil.example", "/"},
		{"/%09/evil.example", "/"},
		{"/\t/evil.example", "/"},
		{"/..//evil.example", "/"},
		{"/./x", "/"},
		{"javascript:alert(1)", "/"},
		{"/login?next=//evil.example", "/"},
		{"evil.example", "/"},
	}
	e := newPageEnv(t)
	for _, tt := range tests {
		t.Run(tt.next, func(t *testing.T) {
			c := e.client(t)
			_, form := e.get(t, c, "/login?next="+url.QueryEscape(tt.next))
			if tt.location == "/" && strings.Contains(form, "evil") {
				t.Errorf("the login form carries the unsafe next %q", tt.next)
			}
			resp := e.login(t, c, pageBasicKey, tt.next)
			if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || got != tt.location {
				t.Errorf("login with next=%q = %d to %q, want 303 to %q", tt.next, resp.StatusCode, got, tt.location)
			}
		})
	}
}

func TestPageSessionCookie(t *testing.T) {
	e := newPageEnv(t)
	good := sessionCookie(e.login(t, e.client(t), pageBasicKey, ""))
	if good == nil {
		t.Fatal("no session cookie")
	}
	other, err := site.NewPage(site.PageConfig{Store: e.tree.Store, Auth: e.auth, Secret: []byte("another-secret-another-secret-another"), Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	// A cookie that the other server (another secret) made.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/login", nil)
	other.ServeHTTP(rec, req)
	csrf := csrfField.FindStringSubmatch(rec.Body.String())[1]
	form := url.Values{"csrf": {html.UnescapeString(csrf)}, "credential": {pageBasicKey}}
	req = httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range rec.Result().Cookies() {
		req.AddCookie(c)
	}
	rec = httptest.NewRecorder()
	other.ServeHTTP(rec, req)
	foreign := sessionCookie(rec.Result())
	if foreign == nil {
		t.Fatal("the other server set no session cookie")
	}

	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	tests := []struct {
		name, value string
	}{
		{"Garbage", "not-a-cookie"},
		{"Empty", ""},
		{"ForgedSignature", flip(good.Value, len(good.Value)-3)},
		{"ForgedBody", flip(good.Value, 10)},
		{"NoSignature", good.Value[:strings.LastIndexByte(good.Value, '.')]},
		{"AnotherSecret", foreign.Value},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.AddCookie(&http.Cookie{Name: site.SessionCookie, Value: tt.value})
			if p, ok := e.page.Principal(req); ok {
				t.Errorf("cookie accepted as %+v", p)
			}
			rec := httptest.NewRecorder()
			e.page.ServeHTTP(rec, req)
			if body := rec.Body.String(); !strings.Contains(body, `id="login"`) || strings.Contains(body, "Logged in") {
				t.Error("the page treats the visitor as logged in")
			}
		})
	}

	t.Run("Good", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.AddCookie(good)
		if p, ok := e.page.Principal(req); !ok || p.Name != "k-basic" {
			t.Errorf("Principal = %+v, %v", p, ok)
		}
	})

	t.Run("Expired", func(t *testing.T) {
		e.clock.Advance(8*time.Hour + time.Second)
		defer e.clock.Advance(-(8*time.Hour + time.Second))
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.AddCookie(good)
		if p, ok := e.page.Principal(req); ok {
			t.Errorf("an expired session is accepted as %+v", p)
		}
	})
}

func TestPageRevoked(t *testing.T) {
	e := newPageEnv(t)
	c := e.client(t)
	e.login(t, c, pageBasicKey, "")
	path := "/bin/26.1.1/engine-26.1.1-linux-arm64.tar.gz"
	if resp, _ := e.get(t, c, path); resp.StatusCode != http.StatusOK {
		t.Fatalf("download = %d", resp.StatusCode)
	}
	e.auth.revoke(pageBasicKey)
	calls := e.auth.callCount()
	e.clock.Advance(500 * time.Millisecond)
	if resp, _ := e.get(t, c, path); resp.StatusCode != http.StatusOK || e.auth.callCount() != calls {
		t.Errorf("within Recheck: download = %d, %d checks, want 200 from the cache", resp.StatusCode, e.auth.callCount()-calls)
	}
	e.clock.Advance(501 * time.Millisecond)
	if resp, _ := e.get(t, c, path); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a second after the key was revoked: download = %d, want 401", resp.StatusCode)
	}
	if _, body := e.get(t, c, "/"); strings.Contains(body, "Logged in") {
		t.Error("the page still shows the revoked session")
	}
}

func TestPageLogout(t *testing.T) {
	e := newPageEnv(t)
	c := e.client(t)
	resp := e.login(t, c, pageFullKey, "")
	old := sessionCookie(resp)

	if resp, _ := e.post(t, c, "/logout", url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("logout without the CSRF token = %d, want 403", resp.StatusCode)
	}
	if _, body := e.get(t, c, "/"); !strings.Contains(body, "Logged in with API key <strong>k-full</strong>") {
		t.Fatal("a refused logout ended the session")
	}
	tok := e.csrf(t, c, "/")
	resp, _ = e.post(t, c, "/logout", url.Values{"csrf": {tok}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout = %d", resp.StatusCode)
	}
	if ck := sessionCookie(resp); ck == nil || ck.MaxAge >= 0 {
		t.Errorf("logout cookie = %+v, want it deleted", ck)
	}
	if _, body := e.get(t, c, "/"); strings.Contains(body, "Logged in") {
		t.Error("still logged in after logout")
	}
	// The old cookie, replayed, is refused by this server.
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.AddCookie(old)
	if _, ok := e.page.Principal(req); ok {
		t.Error("the logged-out cookie still works")
	}
}

func TestPageEscapes(t *testing.T) {
	e := newPageEnv(t)
	r, _ := e.tree.Manifest.Find(e.tree.Latest)
	r.Artifacts[0].Name = `<script>alert(1)</script>`
	r.Artifacts[1].Key = `bin/26.1.1/"><img src=x onerror=alert(1)>.tar.gz`
	r.Artifacts[2].SHA256 = `<iframe src="https://evil.example">`
	e.tree.writeManifest(t)
	_, body := e.get(t, e.client(t), "/")
	for _, bad := range []string{"<script>alert", "<img src=x", "<iframe"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page contains %q unescaped", bad)
		}
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the page does not show the escaped name")
	}
}

// countingStore counts the objects the page opens.
type countingStore struct {
	publish.Store
	opens chan string
}

func (s countingStore) Open(ctx context.Context, key string) (publish.Object, error) {
	select {
	case s.opens <- key:
	default:
	}
	return s.Store.Open(ctx, key)
}

func TestPageCachesByETag(t *testing.T) {
	tree := newPageTree(t)
	st := countingStore{Store: tree.Store, opens: make(chan string, 100)}
	page, err := site.NewPage(site.PageConfig{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	get := func() string {
		rec := httptest.NewRecorder()
		page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET / = %d", rec.Code)
		}
		return rec.Body.String()
	}
	get()
	if n := len(st.opens); n != 4 {
		t.Errorf("first page read %d objects, want 4 (releases.json, latest, preview, channel)", n)
	}
	for len(st.opens) > 0 {
		<-st.opens
	}
	body := get()
	if n := len(st.opens); n != 0 {
		t.Errorf("second page read %d objects, want none (unchanged ETags)", n)
	}
	if strings.Contains(body, "Log in") {
		t.Error("a page without an Authenticator offers a login")
	}
	tree.put(t, publish.KeyLatest, []byte("25.4.2\n"))
	if body := get(); !strings.Contains(body, `data-file="engine-25.4.2-linux-amd64.tar.gz"`) {
		t.Error("the page does not follow a moved pointer")
	}
	// This tree has no channel record: it is looked for again whenever
	// the tree changed.
	if key := <-st.opens; key != publish.KeyLatest || len(st.opens) != 1 || <-st.opens != publish.KeyChannel {
		t.Errorf("after moving latest the page read %s and %d more, want latest and the missing channel", key, len(st.opens))
	}
}

// TestPageSharesTree: mounted in the download server, the page reads the
// server's cache of the tree: after the page read the pointers and the
// manifest, a short URL reads nothing again, and both follow a moved
// pointer together.
func TestPageSharesTree(t *testing.T) {
	tree := newPageTree(t)
	st := countingStore{Store: tree.Store, opens: make(chan string, 100)}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	page, err := site.NewPage(site.PageConfig{Store: st, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := site.New(site.Config{Store: st, Page: page, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	opened := func() []string {
		var keys []string
		for len(st.opens) > 0 {
			keys = append(keys, <-st.opens)
		}
		return keys
	}
	if rec := get("/"); rec.Code != http.StatusOK {
		t.Fatalf("GET / = %d", rec.Code)
	}
	if got := opened(); len(got) != 4 {
		t.Errorf("the page read %v, want latest, preview, releases.json and channel", got)
	}
	if rec := get("/x86/treasury-cli"); rec.Code != http.StatusFound || !strings.Contains(rec.Header().Get("Location"), "26.1.1") {
		t.Fatalf("GET /x86/treasury-cli = %d to %q", rec.Code, rec.Header().Get("Location"))
	}
	if got := opened(); len(got) != 0 {
		t.Errorf("a short URL after the page read %v again, want nothing (one cache)", got)
	}
	tree.put(t, publish.KeyLatest, []byte("25.4.2\n"))
	if rec := get("/x86/treasury-cli"); !strings.Contains(rec.Header().Get("Location"), "25.4.2") {
		t.Errorf("the short URL does not follow the moved pointer: %q", rec.Header().Get("Location"))
	}
	if body := get("/").Body.String(); !strings.Contains(body, `data-file="engine-25.4.2-linux-amd64.tar.gz"`) {
		t.Error("the page does not follow the moved pointer")
	}
	if got := opened(); !slices.Equal(got, []string{publish.KeyLatest, publish.KeyChannel}) {
		t.Errorf("after moving latest the server and page read %v, want latest once (and the missing channel)", got)
	}
}

func TestPageMethods(t *testing.T) {
	e := newPageEnv(t)
	tests := []struct {
		method, path string
		status       int
	}{
		{http.MethodPost, "/", http.StatusMethodNotAllowed},
		{http.MethodGet, "/logout", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/login", http.StatusMethodNotAllowed},
		{http.MethodHead, "/", http.StatusOK},
		{http.MethodGet, "/static/nope.js", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.path, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, e.srv.URL+tt.path, nil)
			resp, err := e.client(t).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("%s %s = %d, want %d", tt.method, tt.path, resp.StatusCode, tt.status)
			}
		})
	}
}

// failingStore is a store that cannot be reached.
type failingStore struct{ publish.Store }

func (failingStore) Stat(context.Context, string) (publish.ObjectInfo, error) {
	return publish.ObjectInfo{}, fmt.Errorf("stat: %w", publish.ErrUnavailable)
}

func TestPageStoreStates(t *testing.T) {
	empty, err := dir.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	tests := []struct {
		name   string
		store  publish.Store
		status int
		want   string
	}{
		{"NothingPublished", empty, http.StatusOK, "Nothing is published yet."},
		{"StoreUnavailable", failingStore{empty}, http.StatusServiceUnavailable, "The release store cannot be read right now."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := site.NewPage(site.PageConfig{Store: tt.store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.want) {
				t.Errorf("GET / = %d, want %d with %q", rec.Code, tt.status, tt.want)
			}
		})
	}
}

func TestNewPageRefuses(t *testing.T) {
	st, err := dir.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tests := []struct {
		name string
		cfg  site.PageConfig
	}{
		{"NoStore", site.PageConfig{}},
		{"ShortSecret", site.PageConfig{Store: st, Auth: newPageAuth(), Secret: []byte("too short")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := site.NewPage(tt.cfg); err == nil {
				t.Error("NewPage accepted it")
			}
		})
	}
}

// TestPageRealAuth logs in with a real access token and a real API key of
// site/auth, and shows that removing the user or revoking the key ends the
// browser session within Recheck.
func TestPageRealAuth(t *testing.T) {
	ctx := context.Background()
	e := newPageEnv(t)
	db, err := auth.Open(ctx, filepath.Join(t.TempDir(), "wharf.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.Now = e.clock.Now
	if _, err := db.CreateOrg(ctx, "bigco", site.LevelFull); err != nil {
		t.Fatal(err)
	}
	if err := db.AddUser(ctx, "grace", "bigco"); err != nil {
		t.Fatal(err)
	}
	token, _, err := db.CreateToken(ctx, "grace")
	if err != nil {
		t.Fatal(err)
	}
	k, key, err := db.CreateAPIKey(ctx, "bigco")
	if err != nil {
		t.Fatal(err)
	}
	page, err := site.NewPage(site.PageConfig{Store: e.tree.Store, Auth: db, Secret: pageSecret, Now: e.clock.Now, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := site.New(site.Config{Store: e.tree.Store, Auth: db, Sessions: page, Page: page, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.page, e.srv = page, httptest.NewServer(srv)
	defer e.srv.Close()

	image := "/img/26.1.1/treasury-node-26.1.1-arm64.tar"
	tests := []struct {
		name, cred, who string
		maxAge          time.Duration
		revoke          func() error
	}{
		{"Token", token, "as <strong>grace</strong> with an access token of bigco (level full)", 24 * time.Hour,
			func() error { return db.RemoveUser(ctx, "grace", "") }},
		{"APIKey", key, "with the API key <strong>" + k.ID + "</strong> of bigco (level full)", 8 * time.Hour,
			func() error { return db.RevokeAPIKey(ctx, k.ID) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := e.client(t)
			resp := e.login(t, c, tt.cred, image)
			ck := sessionCookie(resp)
			if resp.StatusCode != http.StatusSeeOther || ck == nil || resp.Header.Get("Location") != image {
				t.Fatalf("login = %d to %q", resp.StatusCode, resp.Header.Get("Location"))
			}
			if ck.MaxAge <= 0 || time.Duration(ck.MaxAge)*time.Second > tt.maxAge {
				t.Errorf("Max-Age = %d s, want at most %v", ck.MaxAge, tt.maxAge)
			}
			if _, body := e.get(t, c, "/"); !strings.Contains(body, tt.who) {
				t.Errorf("the page does not say %s", tt.who)
			}
			if resp, _ := e.get(t, c, image); resp.StatusCode != http.StatusOK {
				t.Errorf("full download = %d, want 200", resp.StatusCode)
			}
			if err := tt.revoke(); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(time.Second + time.Millisecond)
			if resp, _ := e.get(t, c, image); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("a second after revocation: download = %d, want 401", resp.StatusCode)
			}
		})
	}
}

// TestPageLogoutPersistent: a logout is recorded in the auth database, so
// the copied cookie is refused by a restarted server (a new Page with the
// same secret and database) and after more logouts than the in-memory
// cache holds.
func TestPageLogoutPersistent(t *testing.T) {
	db, err := auth.Open(context.Background(), filepath.Join(t.TempDir(), "wharf.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e := newPageEnv(t)
	db.Now = e.clock.Now
	newPage := func() *site.Page {
		page, err := site.NewPage(site.PageConfig{
			Store: e.tree.Store, Auth: e.auth, Secret: pageSecret, Now: e.clock.Now,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Revocations: db,
		})
		if err != nil {
			t.Fatal(err)
		}
		return page
	}
	page := newPage()
	login := func(p *site.Page) *http.Cookie {
		t.Helper()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/login", nil)
		p.ServeHTTP(rec, req)
		csrfCookie := sessionCookieNamed(rec.Result(), site.CSRFCookie)
		tok := csrfFromBody(t, rec.Body.String())
		form := url.Values{"credential": {pageFullKey}, "csrf": {tok}}
		req = httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(csrfCookie)
		rec = httptest.NewRecorder()
		p.ServeHTTP(rec, req)
		ck := sessionCookieNamed(rec.Result(), site.SessionCookie)
		if ck == nil {
			t.Fatalf("login: %d %s", rec.Code, rec.Body)
		}
		return ck
	}
	logout := func(p *site.Page, ck *http.Cookie) {
		t.Helper()
		rec := httptest.NewRecorder()
		csrf := &http.Cookie{Name: site.CSRFCookie, Value: strings.Repeat("A", 43)}
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.AddCookie(csrf)
		req.AddCookie(ck)
		p.ServeHTTP(rec, req)
		form := url.Values{"csrf": {csrfFromBody(t, rec.Body.String())}}
		req = httptest.NewRequest(http.MethodPost, "/logout", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(csrf)
		req.AddCookie(ck)
		rec = httptest.NewRecorder()
		p.ServeHTTP(rec, req)
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("logout = %d %s", rec.Code, rec.Body)
		}
	}
	valid := func(p *site.Page, ck *http.Cookie) bool {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.AddCookie(ck)
		_, ok := p.Principal(req)
		return ok
	}
	copied := login(page)
	if !valid(page, copied) {
		t.Fatal("a fresh session is not valid")
	}
	logout(page, copied)
	if valid(page, copied) {
		t.Fatal("the logged-out cookie still works on the same server")
	}
	if valid(newPage(), copied) {
		t.Error("the logged-out cookie works again after a restart")
	}
	other := login(page)
	if !valid(newPage(), other) {
		t.Error("another session stopped working")
	}

	// Two replicas sharing the database: a session that replica b has just
	// checked (and caches) is refused there within Recheck of a logout on a.
	a, b := newPage(), newPage()
	shared := login(a)
	if !valid(b, shared) {
		t.Fatal("a session of replica a is not valid on replica b")
	}
	logout(a, shared)
	if !valid(b, shared) {
		t.Error("replica b asked the database again within Recheck (want its cache)")
	}
	e.clock.Advance(time.Second + time.Millisecond)
	if valid(b, shared) {
		t.Error("a second after a logout on replica a, replica b still accepts the session")
	}
}

func sessionCookieNamed(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func csrfFromBody(t *testing.T, body string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF field:\n%s", body)
	}
	return html.UnescapeString(m[1])
}

// TestPageBaseURL: without PageConfig.BaseURL the page's commands name the
// URL the tree was published for, never a Host a request sent; a tree
// without a channel record gets a name that resolves nowhere, except for
// a visitor on this machine.
func TestPageBaseURL(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	commands := func(t *testing.T, page *site.Page, host, remote string) string {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host, req.RemoteAddr = host, remote
		rec := httptest.NewRecorder()
		page.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET / = %d", rec.Code)
		}
		m := regexp.MustCompile(`curl -fsSL (\S+)/install`).FindStringSubmatch(html.UnescapeString(rec.Body.String()))
		if m == nil {
			t.Fatalf("no install command on the page")
		}
		return m[1]
	}
	record := func(url string) []byte {
		return []byte("wharf-channel 2\nsequence 1\nissued 1795687200 2026-11-26T10:00:00Z\nexpires 1796292000 2026-12-03T10:00:00Z\nurl " + url + "\nlatest 26.1.1\nsignature c2lnbmF0dXJl\n")
	}
	tests := []struct {
		name, channel, host, remote, want string
	}{
		{"Channel", "https://dl.example.com", "evil.example", "203.0.113.7:4000", "https://dl.example.com"},
		{"ChannelLoopback", "https://dl.example.com", "127.0.0.1:8080", "127.0.0.1:4000", "https://dl.example.com"},
		{"NoChannelForeignHost", "", "evil.example", "203.0.113.7:4000", site.DefaultPageURL},
		{"NoChannelLoopbackHostFromAfar", "", "localhost:8080", "203.0.113.7:4000", site.DefaultPageURL},
		{"NoChannelLocalVisitor", "", "localhost:8080", "127.0.0.1:4000", "http://localhost:8080"},
		{"NoChannelLocalVisitorForeignHost", "", "evil.example", "127.0.0.1:4000", site.DefaultPageURL},
		{"BadChannelURL", "javascript:alert(1)", "evil.example", "203.0.113.7:4000", site.DefaultPageURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := newPageTree(t)
			if tt.channel != "" {
				tree.put(t, publish.KeyChannel, record(tt.channel))
			}
			page, err := site.NewPage(site.PageConfig{Store: tree.Store, Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			if got := commands(t, page, tt.host, tt.remote); got != tt.want {
				t.Errorf("Host %s from %s: the commands fetch from %s, want %s", tt.host, tt.remote, got, tt.want)
			}
		})
	}
	t.Run("Configured", func(t *testing.T) {
		tree := newPageTree(t)
		tree.put(t, publish.KeyChannel, record("https://dl.example.com"))
		page, err := site.NewPage(site.PageConfig{Store: tree.Store, Logger: logger, BaseURL: "https://mirror.example.net"})
		if err != nil {
			t.Fatal(err)
		}
		if got := commands(t, page, "evil.example", "203.0.113.7:4000"); got != "https://mirror.example.net" {
			t.Errorf("with BaseURL the commands fetch from %s", got)
		}
	})
}
