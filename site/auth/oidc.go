package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// OIDC trusts the ID or access tokens of an external OpenID Connect
// issuer as bearer tokens. A token counts as the wharf user named by its
// UserClaim (default "email", which then needs "email_verified": true):
// the user must exist in the database (wharf user add), which also gives
// its organisations.
type OIDC struct {
	// Issuer is the issuer URL; tokens must carry it as iss.
	Issuer string
	// Audience must be among the token's aud: the client id wharf's tokens
	// are minted for. It is required (Check): without it a token the same
	// issuer minted for any other application would do (ID token
	// substitution, which OpenID Connect Core 3.1.3.7 forbids).
	Audience string
	// UserClaim names the string claim that holds the wharf user name; ""
	// means "email". A token without it is refused: there is no fallback
	// to another claim, which another user could control.
	UserClaim string
	// MaxLifetime caps exp - iat; 0 means TokenTTL, as wharf's own
	// tokens. A token valid for longer is refused.
	MaxLifetime time.Duration
	// Client fetches the discovery document and keys; nil is a client with
	// a 10 s timeout.
	Client *http.Client

	mu       sync.Mutex
	keys     map[string]any // kid -> *rsa.PublicKey or *ecdsa.PublicKey
	tried    time.Time      // start of the last fetch of the keys, successful or not
	fetching *keyFetch      // the fetch under way, nil when none
}

// keyFetch is one fetch of the issuer's keys, which every token that needs
// it waits for.
type keyFetch struct {
	done chan struct{} // closed when keys and err are set
	keys map[string]any
	err  error
}

// Check reports a configuration that must not be used: no issuer, or no
// audience.
func (o *OIDC) Check() error {
	if o.Issuer == "" {
		return errors.New("oidc: no issuer URL")
	}
	if o.Audience == "" {
		return fmt.Errorf("oidc: issuer %s without an audience: set the client id wharf's tokens are issued for (--oidc-audience), or any token that issuer mints for another application would be accepted", o.Issuer)
	}
	return nil
}

func (o *OIDC) userClaim() string {
	if o.UserClaim == "" {
		return "email"
	}
	return o.UserClaim
}

// minKeyRefresh bounds how often an unknown key id makes the keys be
// fetched again, so that forged kids cannot make wharf hammer the issuer.
const minKeyRefresh = time.Minute

// key returns the issuer's key of kid, fetching the key set when the kid
// is unknown (at most once a minute). The fetch runs without the lock,
// so a slow issuer delays only the tokens that need its answer, and
// those all wait for the one fetch under way.
func (o *OIDC) key(ctx context.Context, kid string, now time.Time) (any, error) {
	o.mu.Lock()
	if k, ok := o.keys[kid]; ok {
		o.mu.Unlock()
		return k, nil
	}
	f := o.fetching
	if f == nil {
		if !o.tried.IsZero() && now.Sub(o.tried) < minKeyRefresh {
			o.mu.Unlock()
			return nil, fmt.Errorf("oidc: unknown key id %q (keys fetched less than %v ago)", kid, minKeyRefresh)
		}
		o.tried = now
		f = &keyFetch{done: make(chan struct{})}
		o.fetching = f
		// The fetch outlives a caller that gives up: the others wait
		// for it. The client's timeout bounds it.
		go o.fetch(context.WithoutCancel(ctx), f)
	}
	o.mu.Unlock()
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("oidc: keys of %s: %w", o.Issuer, context.Cause(ctx))
	}
	if f.err != nil {
		return nil, f.err
	}
	if k, ok := f.keys[kid]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("oidc: unknown key id %q", kid)
}

// fetch runs f and makes its keys the known ones when it succeeds.
func (o *OIDC) fetch(ctx context.Context, f *keyFetch) {
	keys, err := o.fetchKeys(ctx)
	o.mu.Lock()
	if err == nil {
		o.keys = keys
	}
	o.fetching = nil
	o.mu.Unlock()
	f.keys, f.err = keys, err
	close(f.done)
}

func (o *OIDC) client() *http.Client {
	if o.Client != nil {
		return o.Client
	}
	return &http.Client{Timeout: 10 * time.Second}
}

func (o *OIDC) getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := o.client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}

// fetchKeys reads the issuer's discovery document and its JWKS.
func (o *OIDC) fetchKeys(ctx context.Context) (map[string]any, error) {
	var disc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := o.getJSON(ctx, strings.TrimRight(o.Issuer, "/")+"/.well-known/openid-configuration", &disc); err != nil {
		return nil, fmt.Errorf("oidc: discovery of %s: %w", o.Issuer, err)
	}
	if disc.Issuer != o.Issuer || disc.JWKSURI == "" {
		return nil, fmt.Errorf("oidc: discovery of %s names issuer %q and keys %q", o.Issuer, disc.Issuer, disc.JWKSURI)
	}
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
			Kty string `json:"kty"`
			Use string `json:"use"`
			N   string `json:"n"`
			E   string `json:"e"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if err := o.getJSON(ctx, disc.JWKSURI, &set); err != nil {
		return nil, fmt.Errorf("oidc: keys of %s: %w", o.Issuer, err)
	}
	keys := map[string]any{}
	b64 := func(s string) *big.Int {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || len(b) == 0 {
			return nil
		}
		return new(big.Int).SetBytes(b)
	}
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		switch k.Kty {
		case "RSA":
			n, e := b64(k.N), b64(k.E)
			if n == nil || e == nil || !e.IsInt64() || n.BitLen() < 2048 {
				continue
			}
			keys[k.Kid] = &rsa.PublicKey{N: n, E: int(e.Int64())}
		case "EC":
			x, errX := base64.RawURLEncoding.DecodeString(k.X)
			y, errY := base64.RawURLEncoding.DecodeString(k.Y)
			if k.Crv != "P-256" || errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
				continue
			}
			pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
			if err != nil {
				continue
			}
			keys[k.Kid] = pub
		}
	}
	return keys, nil
}

// verify checks an external token and returns the wharf user name it
// stands for and its expiry. Errors: the reason the token is refused.
func (o *OIDC) verify(ctx context.Context, token string, now func() time.Time) (string, time.Time, error) {
	if err := o.Check(); err != nil {
		return "", time.Time{}, err
	}
	if err := checkJWS(token); err != nil {
		return "", time.Time{}, fmt.Errorf("oidc: %w", err)
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{"RS256", "ES256"}),
		jwt.WithTimeFunc(now),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(o.Issuer),
		jwt.WithAudience(o.Audience),
	}
	claims := jwt.MapClaims{}
	_, err := jwt.NewParser(opts...).ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		k, err := o.key(ctx, kid, now())
		if err != nil {
			return nil, err
		}
		// The key's type must match the algorithm: an RSA key never
		// verifies ES256 and the other way round.
		switch k.(type) {
		case *rsa.PublicKey:
			if t.Method.Alg() != "RS256" {
				return nil, errors.New("oidc: RSA key for a non-RS256 token")
			}
		case *ecdsa.PublicKey:
			if t.Method.Alg() != "ES256" {
				return nil, errors.New("oidc: EC key for a non-ES256 token")
			}
		}
		return k, nil
	})
	if err != nil {
		return "", time.Time{}, err
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil {
		return "", time.Time{}, errors.New("oidc: token without expiry")
	}
	iat, err := claims.GetIssuedAt()
	if err != nil || iat == nil {
		return "", time.Time{}, errors.New("oidc: token without issue time (iat)")
	}
	limit := o.MaxLifetime
	if limit <= 0 {
		limit = TokenTTL
	}
	if life := exp.Sub(iat.Time); life > limit {
		return "", time.Time{}, fmt.Errorf("oidc: token valid for %v, longer than %v", life, limit)
	}
	claim := o.userClaim()
	name, ok := claims[claim].(string)
	if !ok || name == "" {
		return "", time.Time{}, fmt.Errorf("oidc: token without a string %s claim", claim)
	}
	if claim == "email" {
		if v, _ := claims["email_verified"].(bool); !v {
			return "", time.Time{}, fmt.Errorf("oidc: the issuer has not verified the email %s (email_verified is not true)", name)
		}
	}
	return name, exp.Time, nil
}
