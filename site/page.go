package site

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/clientip"
	"github.com/wharfhq/wharf/publish"
)

// PageConfig configures the browser page.
type PageConfig struct {
	Store publish.Store // the published tree
	// Auth checks what is pasted into the login form. Nil disables login:
	// the page only lists.
	Auth Authenticator
	// Secret signs the session and CSRF cookies (at least 32 bytes). Keep it
	// stable across restarts and replicas, or sessions end with them.
	Secret []byte
	Now    func() time.Time // the clock; nil for time.Now
	Logger *slog.Logger     // nil discards
	// BaseURL is the server's public URL for the commands the page shows;
	// "" takes the URL the tree was published for (the channel record's
	// url), never a request's Host, which anyone can set: a page cached
	// by a proxy would hand the next visitors commands that fetch from
	// elsewhere. Without either, the commands name localhost only for a
	// visitor on this machine, and DefaultPageURL otherwise.
	BaseURL string
	// Secure sets the Secure flag on every cookie, also when a request came
	// over plain HTTP (a TLS proxy that does not send X-Forwarded-Proto).
	Secure bool
	// Recheck is how long a session's credential is trusted after the
	// Authenticator last accepted it (default 1 second): a revoked API key
	// or user, or a logout on another replica sharing the Revocations,
	// keeps a browser session for at most this long.
	Recheck time.Duration
	// TokenSession and APIKeySession cap how long a login lasts (defaults
	// 24 hours and 8 hours); a session never outlives its credential.
	TokenSession  time.Duration
	APIKeySession time.Duration
	// TrustedProxies finds the client behind reverse proxies for the
	// logs, as Config.TrustedProxies does; nil: the peer.
	TrustedProxies *clientip.Resolver
	// Revocations keeps logged-out sessions for every replica and restart;
	// nil takes Auth when it implements SessionRevocations, else logouts
	// are remembered by this process only (up to 10,000 of them).
	Revocations SessionRevocations
}

// Page is the browser page of the download server: the release list at
// "/", the login form at "/login", "/logout" and the stylesheet under
// "/static/". It is an http.Handler for those paths and implements
// Sessions for the download handlers.
type Page struct {
	cfg      PageConfig
	render   *publish.PageRenderer
	keys     *cookieKeys
	style    []byte
	styleTag string
	tree     *releaseTree
	sessions sessionCache
	origin   *http.CrossOriginProtection
}

var _ Sessions = (*Page)(nil)
var _ http.Handler = (*Page)(nil)

// NewPage makes the page, parsing its templates.
func NewPage(cfg PageConfig) (*Page, error) {
	if cfg.Store == nil {
		return nil, errors.New("page: no store")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Recheck <= 0 {
		cfg.Recheck = time.Second
	}
	if cfg.TokenSession <= 0 || cfg.TokenSession > 24*time.Hour {
		cfg.TokenSession = 24 * time.Hour
	}
	if cfg.APIKeySession <= 0 {
		cfg.APIKeySession = 8 * time.Hour
	}
	if cfg.Revocations == nil {
		cfg.Revocations, _ = cfg.Auth.(SessionRevocations)
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	render, err := publish.NewPageRenderer()
	if err != nil {
		return nil, err
	}
	p := &Page{cfg: cfg, render: render, style: render.Style(), sessions: sessionCache{max: 10000, forgetLogouts: cfg.Revocations != nil}, origin: http.NewCrossOriginProtection()}
	sum := sha256.Sum256(p.style)
	p.styleTag = `"` + hex.EncodeToString(sum[:8]) + `"`
	if cfg.Auth != nil {
		if p.keys, err = newCookieKeys(cfg.Secret); err != nil {
			return nil, err
		}
	}
	// Checked on every request; the download server replaces it with its
	// own (useTree), so that the page and the downloads share one cache.
	p.tree = &releaseTree{store: cfg.Store, now: cfg.Now, log: cfg.Logger}
	return p, nil
}

func (p *Page) now() time.Time { return p.cfg.Now() }

// useTree makes the page read the download server's cache of its store
// instead of its own: the page lists what the downloads serve. Called by
// New, before the page serves.
func (p *Page) useTree(t *releaseTree) { p.tree = t }

// Paths the page answers.
const (
	pathStyle = "/static/page.css"
)

// ServeHTTP answers "/", "/login", "/logout" and "/static/page.css".
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/":
		if !allow(w, r, http.MethodGet, http.MethodHead) {
			return
		}
		p.servePage(w, r)
	case "/login":
		if p.cfg.Auth == nil {
			http.NotFound(w, r)
			return
		}
		if !allow(w, r, http.MethodGet, http.MethodHead, http.MethodPost) {
			return
		}
		if r.Method == http.MethodPost {
			p.serveLoginPost(w, r)
			return
		}
		p.serveLogin(w, r, http.StatusOK, "", safeNext(r.URL.Query().Get("next")))
	case "/logout":
		if p.cfg.Auth == nil {
			http.NotFound(w, r)
			return
		}
		if !allow(w, r, http.MethodPost) {
			return
		}
		p.serveLogout(w, r)
	case pathStyle:
		if !allow(w, r, http.MethodGet, http.MethodHead) {
			return
		}
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.Header().Set("ETag", p.styleTag)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(p.style))
	default:
		http.NotFound(w, r)
	}
}

func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// servePage renders the release list for the visitor.
func (p *Page) servePage(w http.ResponseWriter, r *http.Request) {
	status := http.StatusOK
	build := visitorBuild(r)
	snap, err := p.tree.get(r.Context())
	var d *publish.PageData
	if err != nil {
		p.cfg.Logger.Error("page: read the tree", "err", err)
		d = publish.NewPageData(nil, publish.PageOptions{BaseURL: p.baseURL(r, nil)})
		d.Notice = "The release store cannot be read right now. Try again in a minute."
		status = http.StatusServiceUnavailable
	} else {
		d = publish.NewPageData(snap.manifest, publish.PageOptions{
			BaseURL: p.baseURL(r, snap),
			Latest:  snap.pointers[publish.KeyLatest],
			Preview: snap.pointers[publish.KeyPreview],
			Version: strings.TrimSpace(r.URL.Query().Get("version")),
			Prefer:  build,
			Phone:   visitorPhone(r),
		})
	}
	d.Mac = build == "mac"
	// Ask for the architecture hint: the next visit can tell a Linux arm64
	// browser whose User-Agent says x86_64 (Chrome's always does).
	w.Header().Set("Accept-CH", hintPlatform+", "+hintArch)
	if err := p.addSession(w, r, d); err != nil {
		p.fail(w, "session", err)
		return
	}
	p.writeHTML(w, status, publish.PageTemplate, d)
}

// addSession fills in the visitor's login state and points each download
// link where it works for this visitor.
func (p *Page) addSession(w http.ResponseWriter, r *http.Request, d *publish.PageData) error {
	d.Stylesheet = pathStyle
	var pr *Principal
	if p.cfg.Auth != nil {
		d.Session = &publish.PageSession{}
		if got, ok := p.Principal(r); ok {
			pr = &got
			csrf, err := p.csrfFor(w, r)
			if err != nil {
				return err
			}
			*d.Session = publish.PageSession{
				LoggedIn: true,
				Name:     got.Name,
				Kind:     got.Kind,
				Orgs:     got.Orgs,
				Level:    got.Level,
				Expires:  got.Expires,
				CSRF:     csrf,
			}
			for _, a := range []string{publish.AccessPublic, publish.AccessBasic, publish.AccessFull} {
				if got.Allows(a) {
					d.Session.Allowed = append(d.Session.Allowed, a)
				}
			}
		}
	}
	for i := range d.Sections {
		for j := range d.Sections[i].Artifacts {
			for k := range d.Sections[i].Artifacts[j].Files {
				f := &d.Sections[i].Artifacts[j].Files[k]
				switch {
				case p.cfg.Auth == nil || pr.Allows(f.Access):
					f.Link, f.Href = publish.LinkDownload, f.Path
				case pr == nil:
					f.Link, f.Href = publish.LinkLogin, "/login?next="+url.QueryEscape(f.Path)
				default:
					f.Link, f.Href = publish.LinkDenied, ""
				}
			}
		}
	}
	if pr != nil {
		switch pr.Kind {
		case "apikey":
			d.UseCredential("api_key")
		default:
			d.UseCredential("token")
		}
	}
	return nil
}

// loginView is what the "login" template is rendered with.
type loginView struct {
	Page  *publish.PageData
	Error string
	CSRF  string
	Next  string
}

// Messages of the login form. The wrong-credential one never says which
// part was wrong.
const (
	msgBadCredential = "That access token or API key was not accepted. Check that you pasted all of it; it may also have expired or been revoked."
	msgNoCredential  = "Paste an access token or an API key."
	msgBadForm       = "The form expired or did not come from this page. Please try again."
	msgUnavailable   = "Your credential cannot be checked right now. Please try again in a minute."
)

func (p *Page) serveLogin(w http.ResponseWriter, r *http.Request, status int, msg, next string) {
	csrf, err := p.csrfFor(w, r)
	if err != nil {
		p.fail(w, "login form", err)
		return
	}
	// The header offers no second "Log in" on the login form.
	d := &publish.PageData{Title: "Log in", Stylesheet: pathStyle}
	if got, ok := p.Principal(r); ok {
		d.Session = &publish.PageSession{LoggedIn: true, Name: got.Name, Kind: got.Kind, Orgs: got.Orgs, CSRF: csrf}
	}
	p.writeHTML(w, status, "login", &loginView{Page: d, Error: msg, CSRF: csrf, Next: next})
}

// maxForm bounds the login and logout forms.
const maxForm = 64 << 10

func (p *Page) serveLoginPost(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		p.serveLogin(w, r, http.StatusBadRequest, msgBadForm, "")
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	if !p.sameOrigin(r) || !p.keys.checkCSRF(r, r.PostForm.Get("csrf")) {
		p.serveLogin(w, r, http.StatusForbidden, msgBadForm, next)
		return
	}
	cred := strings.TrimSpace(r.PostForm.Get("credential"))
	if cred == "" {
		p.serveLogin(w, r, http.StatusBadRequest, msgNoCredential, next)
		return
	}
	if len(cred) > 4096 {
		p.serveLogin(w, r, http.StatusUnauthorized, msgBadCredential, next)
		return
	}
	kind := credentialKind(cred)
	pr, err := p.check(r, kind, cred)
	if err == nil {
		_, err = p.startSession(w, r, kind, cred, pr)
	}
	var expired *ExpiredError
	switch {
	case errors.As(err, &expired):
		p.cfg.Logger.Info("page: login refused", "kind", kind, "remote", clientString(p.cfg.TrustedProxies.ClientAddr(r), r), "expired", expired.Expired)
		p.serveLogin(w, r, http.StatusUnauthorized, "That access token expired at "+expired.Expired.UTC().Format(time.RFC3339)+" (tokens last 24 hours). Get a new one (treasury token create), or log in with an API key.", next)
		return
	case errors.Is(err, ErrUnauthenticated):
		p.cfg.Logger.Info("page: login refused", "kind", kind, "remote", clientString(p.cfg.TrustedProxies.ClientAddr(r), r))
		p.serveLogin(w, r, http.StatusUnauthorized, msgBadCredential, next)
		return
	case err != nil:
		p.cfg.Logger.Error("page: login", "kind", kind, "err", err)
		p.serveLogin(w, r, http.StatusServiceUnavailable, msgUnavailable, next)
		return
	}
	p.cfg.Logger.Info("page: login", "kind", pr.Kind, "name", pr.Name, "level", pr.Level)
	if next == "" {
		next = "/"
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (p *Page) serveLogout(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil || !p.sameOrigin(r) || !p.keys.checkCSRF(r, r.PostForm.Get("csrf")) {
		p.serveLogin(w, r, http.StatusForbidden, msgBadForm, "")
		return
	}
	p.endSession(w, r)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// sameOrigin refuses cross-origin form posts that browsers label as such
// (Sec-Fetch-Site, Origin), before the CSRF token is even looked at.
func (p *Page) sameOrigin(r *http.Request) bool {
	return p.origin.Check(r) == nil
}

// safeNext returns next when it is a local path the login may send the
// browser back to, else "". Only unreserved characters and slashes pass:
// no scheme, no host ("//", "/\"), no percent-encoded tricks, no dot
// segments, no query.
func safeNext(next string) string {
	if next == "" || len(next) > 1024 || next[0] != '/' || strings.HasPrefix(next, "//") {
		return ""
	}
	for _, c := range next {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~/", c)) {
			return ""
		}
	}
	for _, el := range strings.Split(next[1:], "/") {
		if el == "." || el == ".." {
			return ""
		}
	}
	return next
}

// DefaultPageURL is what the page's commands name as the server when
// neither PageConfig.BaseURL nor the tree says (a tree published before
// the channel record existed) and the visitor is not on this machine: a
// name that resolves nowhere, so that a copied command fails instead of
// fetching from a host a request named.
const DefaultPageURL = "https://download-server.invalid"

// baseURL is the URL the page's commands name: the configured one, the
// one the tree was published for, or, for a visitor on this machine
// reaching it by a loopback name (make run), that.
func (p *Page) baseURL(r *http.Request, snap *snapshot) string {
	if p.cfg.BaseURL != "" {
		return p.cfg.BaseURL
	}
	if snap != nil && snap.url != "" {
		return snap.url
	}
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	if (host == "localhost" || ip != nil && ip.IsLoopback()) && isLoopback(r.RemoteAddr) && r.TLS == nil {
		return "http://" + r.Host
	}
	return DefaultPageURL
}

// isLoopback reports whether a request's remote address is this machine.
func isLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// contentSecurityPolicy allows the page nothing but its own stylesheet and
// forms posting to itself.
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

func (p *Page) writeHTML(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := p.render.Render(&buf, name, data); err != nil {
		p.fail(w, "render", err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	// The page depends on the visitor's session and system.
	h.Set("Cache-Control", "no-store")
	h.Set("Vary", "Cookie, User-Agent, "+hintPlatform+", "+hintArch)
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func (p *Page) fail(w http.ResponseWriter, what string, err error) {
	p.cfg.Logger.Error("page: "+what, "err", err)
	http.Error(w, "internal error", http.StatusInternalServerError)
}
