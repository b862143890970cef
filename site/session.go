package site

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Cookie names of the browser page.
const (
	// SessionCookie holds a login: the credential sealed with AES-256-GCM
	// and the whole value signed with HMAC-SHA256, both keys derived from
	// the server secret.
	SessionCookie = "wharf_session"
	// CSRFCookie holds the random value the forms' CSRF token is an HMAC of.
	CSRFCookie = "wharf_csrf"
)

// Credential kinds a session carries.
const (
	credToken  = "token"
	credAPIKey = "apikey"
)

// errBadCookie is any cookie that does not decode, verify or has expired.
var errBadCookie = errors.New("invalid session cookie")

// cookieKeys are the keys derived from the server secret, one per use, so
// that a value made for one purpose never verifies for another.
type cookieKeys struct {
	mac  []byte // signs session cookies
	csrf []byte // derives CSRF tokens from the CSRF cookie
	aead cipher.AEAD
}

func newCookieKeys(secret []byte) (*cookieKeys, error) {
	if len(secret) < 32 {
		return nil, fmt.Errorf("page: the session secret has %d bytes, want at least 32", len(secret))
	}
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte("wharf page " + label))
		return m.Sum(nil)
	}
	block, err := aes.NewCipher(derive("session encryption"))
	if err != nil {
		return nil, fmt.Errorf("page: session cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("page: session cipher: %w", err)
	}
	return &cookieKeys{mac: derive("session signature"), csrf: derive("csrf"), aead: aead}, nil
}

// session is what a session cookie carries.
type session struct {
	ID      string `json:"j"` // random; what a logout revokes
	Kind    string `json:"k"` // credToken or credAPIKey
	Cred    string `json:"c"` // the credential, re-checked while the session lives
	Issued  int64  `json:"i"` // unix seconds
	Expires int64  `json:"e"` // unix seconds
}

const sessionPrefix = "v1."

// seal encodes s as a cookie value: v1.<base64url(nonce|ciphertext)>.<base64url(hmac)>.
func (k *cookieKeys) seal(s session) (string, error) {
	plain, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("seal session: %w", err)
	}
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal session: %w", err)
	}
	body := sessionPrefix + base64.RawURLEncoding.EncodeToString(k.aead.Seal(nonce, nonce, plain, []byte(sessionPrefix)))
	return body + "." + base64.RawURLEncoding.EncodeToString(k.sign(body)), nil
}

func (k *cookieKeys) sign(body string) []byte {
	m := hmac.New(sha256.New, k.mac)
	m.Write([]byte("session:" + body))
	return m.Sum(nil)
}

// open verifies and decodes a cookie value, refusing one that expired by now.
func (k *cookieKeys) open(value string, now time.Time) (session, error) {
	var s session
	if len(value) > 4096 || !strings.HasPrefix(value, sessionPrefix) {
		return s, errBadCookie
	}
	i := strings.LastIndexByte(value, '.')
	if i <= len(sessionPrefix) {
		return s, errBadCookie
	}
	body, sig := value[:i], value[i+1:]
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(mac, k.sign(body)) {
		return s, errBadCookie
	}
	sealed, err := base64.RawURLEncoding.DecodeString(body[len(sessionPrefix):])
	if err != nil || len(sealed) < k.aead.NonceSize() {
		return s, errBadCookie
	}
	n := k.aead.NonceSize()
	plain, err := k.aead.Open(nil, sealed[:n], sealed[n:], []byte(sessionPrefix))
	if err != nil {
		return s, errBadCookie
	}
	if err := json.Unmarshal(plain, &s); err != nil {
		return s, errBadCookie
	}
	if s.ID == "" || s.Cred == "" || (s.Kind != credToken && s.Kind != credAPIKey) || !now.Before(time.Unix(s.Expires, 0)) {
		return s, errBadCookie
	}
	return s, nil
}

// csrfToken is the form token that belongs to a CSRF cookie value.
func (k *cookieKeys) csrfToken(cookie string) string {
	m := hmac.New(sha256.New, k.csrf)
	m.Write([]byte("csrf:" + cookie))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF reports whether the form's token belongs to the request's CSRF
// cookie (a signed double submit: a site that cannot read the cookie cannot
// make the token).
func (k *cookieKeys) checkCSRF(r *http.Request, token string) bool {
	c, err := r.Cookie(CSRFCookie)
	if err != nil || !validCSRFCookie(c.Value) || token == "" {
		return false
	}
	return hmac.Equal([]byte(token), []byte(k.csrfToken(c.Value)))
}

func validCSRFCookie(v string) bool {
	b, err := base64.RawURLEncoding.DecodeString(v)
	return err == nil && len(b) == 32
}

func newCSRFCookieValue() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("csrf cookie: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// secureRequest reports whether cookies for r must be Secure: the server
// is configured so, r came over TLS, or a proxy says it did.
func (p *Page) secureRequest(r *http.Request) bool {
	return p.cfg.Secure || r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func (p *Page) cookie(r *http.Request, name, value string, maxAge time.Duration) *http.Cookie {
	c := &http.Cookie{
		Name:     name,
		Value:    value,
		Path:     "/",
		HttpOnly: true,
		Secure:   p.secureRequest(r),
		SameSite: http.SameSiteLaxMode,
	}
	switch {
	case maxAge > 0:
		c.MaxAge = int(maxAge / time.Second)
		c.Expires = p.now().Add(maxAge)
	case maxAge < 0:
		c.MaxAge = -1
		c.Expires = time.Unix(1, 0)
	}
	return c
}

// csrfFor returns the CSRF token of r's CSRF cookie, setting a new cookie
// on w when r has none.
func (p *Page) csrfFor(w http.ResponseWriter, r *http.Request) (string, error) {
	if c, err := r.Cookie(CSRFCookie); err == nil && validCSRFCookie(c.Value) {
		return p.keys.csrfToken(c.Value), nil
	}
	v, err := newCSRFCookieValue()
	if err != nil {
		return "", err
	}
	http.SetCookie(w, p.cookie(r, CSRFCookie, v, 0))
	return p.keys.csrfToken(v), nil
}

// checked is a session whose credential the Authenticator accepted at a
// time, or one that was logged out.
type checked struct {
	principal Principal
	at        time.Time // when the credential was last checked
	expires   time.Time // when the session ends; the entry is useless after
	loggedOut bool
}

// sessionCache remembers recently checked sessions, so that a page view
// or download does not hit the credential store every time, and the
// sessions logged out on this server until they would have expired.
type sessionCache struct {
	mu  sync.Mutex
	max int
	// forgetLogouts lets a full cache drop logouts too: they are kept in
	// the SessionRevocations, which a session is checked against again.
	forgetLogouts bool
	m             map[[32]byte]checked
}

func (c *sessionCache) get(key [32]byte) (checked, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	return e, ok
}

func (c *sessionCache) put(key [32]byte, e checked, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[[32]byte]checked)
	}
	if len(c.m) >= c.max {
		for k, old := range c.m {
			if !now.Before(old.expires) {
				delete(c.m, k)
			}
		}
	}
	if len(c.m) >= c.max {
		// Still full of live sessions: forget the checks (they are redone
		// on the next request), keep the logouts.
		for k, old := range c.m {
			if !old.loggedOut || c.forgetLogouts {
				delete(c.m, k)
			}
		}
	}
	if len(c.m) < c.max {
		c.m[key] = e
	}
}

func (c *sessionCache) forget(key [32]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// Principal returns who the session cookie of r is logged in as. It
// implements Sessions for the download handlers. The credential in the
// cookie is checked again with the Authenticator once it was last checked
// more than Recheck ago, so a revoked key or user loses its sessions
// within Recheck.
func (p *Page) Principal(r *http.Request) (Principal, bool) {
	if p.cfg.Auth == nil {
		return Principal{}, false
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return Principal{}, false
	}
	now := p.now()
	s, err := p.keys.open(c.Value, now)
	if err != nil {
		return Principal{}, false
	}
	key := sha256.Sum256([]byte(c.Value))
	if e, ok := p.sessions.get(key); ok {
		if e.loggedOut {
			return Principal{}, false
		}
		if now.Sub(e.at) < p.cfg.Recheck && now.Before(e.expires) {
			return e.principal, true
		}
	}
	if rv := p.cfg.Revocations; rv != nil {
		revoked, err := rv.SessionRevoked(r.Context(), s.ID)
		if err != nil {
			p.cfg.Logger.Warn("page: session revocation check failed", "err", err)
			return Principal{}, false
		}
		if revoked {
			p.sessions.put(key, checked{loggedOut: true, expires: time.Unix(s.Expires, 0)}, now)
			return Principal{}, false
		}
	}
	pr, err := p.check(r, s.Kind, s.Cred)
	if err != nil {
		p.sessions.forget(key)
		if !errors.Is(err, ErrUnauthenticated) {
			p.cfg.Logger.Warn("page: session check failed", "err", err)
		}
		return Principal{}, false
	}
	p.sessions.put(key, checked{principal: pr, at: now, expires: time.Unix(s.Expires, 0)}, now)
	return pr, true
}

// check asks the Authenticator about a credential of a kind.
func (p *Page) check(r *http.Request, kind, cred string) (Principal, error) {
	if kind == credToken {
		return p.cfg.Auth.Token(r.Context(), cred)
	}
	return p.cfg.Auth.APIKey(r.Context(), cred)
}

// credentialKind guesses what a pasted credential is: access tokens are
// JWTs (three base64url parts, the first a JSON header); anything else is
// taken for an API key.
func credentialKind(cred string) string {
	parts := strings.Split(cred, ".")
	if len(parts) == 3 && strings.HasPrefix(parts[0], "eyJ") {
		return credToken
	}
	return credAPIKey
}

// startSession sets the session cookie of a login that p accepted and
// returns when it ends: no later than the credential, and no later than
// TokenSession (tokens) or APIKeySession (API keys) from now.
func (p *Page) startSession(w http.ResponseWriter, r *http.Request, kind, cred string, pr Principal) (time.Time, error) {
	now := p.now()
	life := p.cfg.APIKeySession
	if kind == credToken {
		life = p.cfg.TokenSession
	}
	exp := now.Add(life)
	if !pr.Expires.IsZero() && pr.Expires.Before(exp) {
		exp = pr.Expires
	}
	exp = exp.Truncate(time.Second)
	if !exp.After(now) {
		return time.Time{}, fmt.Errorf("start session: %w: the credential expires now", ErrUnauthenticated)
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return time.Time{}, fmt.Errorf("start session: %w", err)
	}
	v, err := p.keys.seal(session{ID: base64.RawURLEncoding.EncodeToString(id[:]), Kind: kind, Cred: cred, Issued: now.Unix(), Expires: exp.Unix()})
	if err != nil {
		return time.Time{}, err
	}
	http.SetCookie(w, p.cookie(r, SessionCookie, v, exp.Sub(now)))
	p.sessions.put(sha256.Sum256([]byte(v)), checked{principal: pr, at: now, expires: exp}, now)
	return exp, nil
}

// endSession clears the session cookie and records the session as
// logged out until it would have expired: in the SessionRevocations (the
// database, for every replica and restart) and in this process's cache.
func (p *Page) endSession(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil {
		if s, err := p.keys.open(c.Value, p.now()); err == nil {
			exp := time.Unix(s.Expires, 0)
			if rv := p.cfg.Revocations; rv != nil {
				if err := rv.RevokeSession(r.Context(), s.ID, exp); err != nil {
					p.cfg.Logger.Error("page: logout not recorded in the database; the session ends on this server only", "err", err)
				}
			}
			p.sessions.put(sha256.Sum256([]byte(c.Value)), checked{loggedOut: true, expires: exp}, p.now())
		}
	}
	http.SetCookie(w, p.cookie(r, SessionCookie, "", -1))
}
