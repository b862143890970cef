// Package site is the read side of wharf: the download server over a
// published tree (redirects, canonical downloads, /sig, pointers, the
// install script, the browser page). It reads the tree through a
// publish.Store and checks credentials through an Authenticator, which
// site/auth implements on bun.
package site

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/wharfhq/wharf/publish"
)

// Errors of authentication and authorisation.
var (
	// ErrUnauthenticated: credentials missing, malformed, expired, forged or revoked.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrForbidden: valid credentials whose permission level is too low.
	ErrForbidden = errors.New("permission denied")
)

// ExpiredError is an access token refused because it expired; it is an
// ErrUnauthenticated. Its message says when and how to get a new one.
type ExpiredError struct {
	Expired time.Time // the token's expiry (exp)
}

func (e *ExpiredError) Error() string {
	return "the access token expired at " + e.Expired.UTC().Format(time.RFC3339)
}

// Is makes an ExpiredError an ErrUnauthenticated.
func (e *ExpiredError) Is(target error) bool { return target == ErrUnauthenticated }

// Permission levels of an organisation.
const (
	LevelBasic = "basic"
	LevelFull  = "full"
)

// Principal is who a request is authenticated as.
type Principal struct {
	Kind    string    // "user" (access token) or "apikey"
	Name    string    // the user's name, or the API key's id
	Orgs    []string  // organisations it counts through
	Level   string    // the highest level among Orgs: LevelBasic, LevelFull, or "" for none
	Expires time.Time // when the credential stops being valid; zero when it does not expire
}

// Allows reports whether p may download an artifact of an access class.
// A nil Principal (anonymous) may download only public artifacts.
func (p *Principal) Allows(access string) bool {
	switch access {
	case publish.AccessPublic:
		return true
	case publish.AccessBasic:
		return p != nil && (p.Level == LevelBasic || p.Level == LevelFull)
	case publish.AccessFull:
		return p != nil && p.Level == LevelFull
	}
	return false
}

// Authenticator checks the two kinds of credentials the spec names.
// site/auth implements it; both methods take constant time whatever is wrong.
type Authenticator interface {
	// Token checks an access token (a JWT). Errors: ErrUnauthenticated.
	Token(ctx context.Context, token string) (Principal, error)
	// APIKey checks an organisation API key. Errors: ErrUnauthenticated.
	APIKey(ctx context.Context, key string) (Principal, error)
}

// SessionRevocations keeps the browser sessions that were logged out until
// they would have expired, where every replica and every restart of the
// server sees them (the auth database): a copied session cookie stops
// working at logout, not at its expiry.
type SessionRevocations interface {
	// RevokeSession records the session id as logged out until expires.
	RevokeSession(ctx context.Context, id string, expires time.Time) error
	// SessionRevoked reports whether the session id was logged out.
	SessionRevoked(ctx context.Context, id string) (bool, error)
}

// Sessions finds the browser session (a cookie set by the login form) of a
// request. The page implements it; the download handlers consult it after
// the Authorization header.
type Sessions interface {
	Principal(r *http.Request) (Principal, bool)
}
