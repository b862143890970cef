package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/site"
)

// TokenTTL is how long an access token is valid: one day, as the spec says.
const TokenTTL = 24 * time.Hour

// Issuer is the iss claim of the access tokens wharf signs.
const Issuer = "wharf"

// issuerKeyName names the one issuer key in use.
const issuerKeyName = "default"

// issuerKey is the ES256 (P-256) key access tokens are signed with. It is
// generated on first use and kept in the database, so that `wharf token
// create` and `wharf serve` agree on it.
type issuerKey struct {
	bun.BaseModel `bun:"table:issuer_keys"`

	ID         string    `bun:"id,pk"` // the kid header of the tokens
	Name       string    `bun:"name,notnull"`
	PrivateKey string    `bun:"private_key,notnull"` // PKCS #8 PEM
	CreatedAt  time.Time `bun:"created_at,notnull"`
}

type issuerCache struct {
	mu  sync.Mutex
	kid string
	key *ecdsa.PrivateKey
}

// signer returns the issuer key, loading or generating it on first use.
func (d *DB) signer(ctx context.Context) (string, *ecdsa.PrivateKey, error) {
	d.issuer.mu.Lock()
	defer d.issuer.mu.Unlock()
	if d.issuer.key != nil {
		return d.issuer.kid, d.issuer.key, nil
	}
	k, err := d.loadIssuerKey(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		if err := d.createIssuerKey(ctx); err != nil {
			return "", nil, err
		}
		k, err = d.loadIssuerKey(ctx)
	}
	if err != nil {
		return "", nil, fmt.Errorf("load issuer key: %w", err)
	}
	block, _ := pem.Decode([]byte(k.PrivateKey))
	if block == nil {
		return "", nil, fmt.Errorf("issuer key %s: no PEM block", k.ID)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return "", nil, fmt.Errorf("issuer key %s: %w", k.ID, err)
	}
	priv, ok := parsed.(*ecdsa.PrivateKey)
	if !ok || priv.Curve != elliptic.P256() {
		return "", nil, fmt.Errorf("issuer key %s: not a P-256 key", k.ID)
	}
	d.issuer.kid, d.issuer.key = k.ID, priv
	return k.ID, priv, nil
}

func (d *DB) loadIssuerKey(ctx context.Context) (issuerKey, error) {
	var k issuerKey
	err := d.db.NewSelect().Model(&k).Where("name = ?", issuerKeyName).Scan(ctx)
	return k, err
}

// createIssuerKey generates a key and stores it unless another process
// stored one first; the caller loads whichever won.
func (d *DB) createIssuerKey(ctx context.Context) error {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate issuer key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return fmt.Errorf("encode issuer key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		return fmt.Errorf("encode issuer key: %w", err)
	}
	sum := sha256.Sum256(pub)
	k := issuerKey{
		ID:         hex.EncodeToString(sum[:8]),
		Name:       issuerKeyName,
		PrivateKey: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		CreatedAt:  d.now(),
	}
	if _, err := d.db.NewInsert().Model(&k).On("CONFLICT (name) DO NOTHING").Exec(ctx); err != nil {
		return fmt.Errorf("store issuer key: %w", err)
	}
	return nil
}

// tokenClaims are the claims of a wharf access token: the registered ones
// (sub is the user's name, for people reading a token) and the user's id,
// which the token is bound to.
type tokenClaims struct {
	jwt.RegisteredClaims
	UserID string `json:"uid"`
}

// CreateToken signs a one-day access token for a user. Errors: ErrNotFound.
func (d *DB) CreateToken(ctx context.Context, user string) (string, time.Time, error) {
	uid, err := d.userID(ctx, user)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("create token: %w", err)
	}
	now := d.now().Truncate(time.Second)
	exp := now.Add(TokenTTL)
	var jti [12]byte
	rand.Read(jti[:])
	claims := tokenClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    Issuer,
			Subject:   user,
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(exp),
			ID:        base64.RawURLEncoding.EncodeToString(jti[:]),
		},
		UserID: uid,
	}
	s, err := d.sign(ctx, claims)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("create token: %w", err)
	}
	return s, exp, nil
}

// sign signs claims with the issuer key, the signature in canonical
// low-S form (Token refuses the other).
func (d *DB) sign(ctx context.Context, claims jwt.Claims) (string, error) {
	return d.signHeader(ctx, claims, nil)
}

// signHeader is sign with extra header fields (tests).
func (d *DB) signHeader(ctx context.Context, claims jwt.Claims, header map[string]any) (string, error) {
	kid, key, err := d.signer(ctx)
	if err != nil {
		return "", err
	}
	t := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	t.Header["kid"] = kid
	for k, v := range header {
		t.Header[k] = v
	}
	s, err := t.SignedString(key)
	if err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	signed, sig := s[:strings.LastIndexByte(s, '.')], s[strings.LastIndexByte(s, '.')+1:]
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || len(raw) != 64 {
		return "", errors.New("sign: unexpected ES256 signature")
	}
	ss := new(big.Int).SetBytes(raw[32:])
	if ss.Cmp(halfOrder) > 0 {
		ss.Sub(elliptic.P256().Params().N, ss)
		clear(raw[32:])
		ss.FillBytes(raw[32:])
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(raw), nil
}

// halfOrder is N/2 of P-256: an ECDSA signature (r, s) is also valid as
// (r, N-s), so only s <= N/2 is accepted, and a token has exactly one
// valid encoding.
var halfOrder = new(big.Int).Rsh(elliptic.P256().Params().N, 1)

// canonicalES256 refuses a JWS whose ES256 signature has a high S.
func canonicalES256(token string) error {
	i := strings.LastIndexByte(token, '.')
	if i < 0 {
		return errors.New("malformed token")
	}
	raw, err := base64.RawURLEncoding.DecodeString(token[i+1:])
	if err != nil || len(raw) != 64 {
		return errors.New("malformed ES256 signature")
	}
	if new(big.Int).SetBytes(raw[32:]).Cmp(halfOrder) > 0 {
		return errors.New("non-canonical (high-S) ES256 signature")
	}
	return nil
}

// Token checks an access token: an ES256 JWT signed by the issuer key, not
// expired by d.Now, for a user that still exists and existed when the token
// was issued. Any other algorithm ("none", HS256, RS256) or key is refused.
// Errors: site.ErrUnauthenticated, or a database error.
func (d *DB) Token(ctx context.Context, token string) (site.Principal, error) {
	if d.OIDC != nil {
		var peek jwt.RegisteredClaims
		if _, _, err := jwt.NewParser().ParseUnverified(token, &peek); err == nil && peek.Issuer == d.OIDC.Issuer && peek.Issuer != Issuer {
			return d.oidcToken(ctx, token)
		}
	}
	ctx, cancel := d.bounded(ctx)
	defer cancel()
	kid, key, err := d.signer(ctx)
	if err != nil {
		return site.Principal{}, fmt.Errorf("check token: %w", d.busy(ctx, err))
	}
	p := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodES256.Alg()}),
		jwt.WithTimeFunc(d.now),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(Issuer),
	)
	if err := canonicalES256(token); err != nil {
		return site.Principal{}, fmt.Errorf("%w: token: %v", site.ErrUnauthenticated, err)
	}
	if err := checkJWS(token); err != nil {
		return site.Principal{}, fmt.Errorf("%w: token: %v", site.ErrUnauthenticated, err)
	}
	var claims tokenClaims
	_, err = p.ParseWithClaims(token, &claims, func(t *jwt.Token) (any, error) {
		if t.Header["kid"] != kid {
			return nil, errors.New("unknown key id")
		}
		return &key.PublicKey, nil
	})
	if errors.Is(err, jwt.ErrTokenExpired) && claims.ExpiresAt != nil && errors.Is(err, jwt.ErrTokenInvalidClaims) {
		// Signed by the issuer key (the signature is checked before the
		// claims): a token of ours that has expired.
		return site.Principal{}, &site.ExpiredError{Expired: claims.ExpiresAt.Time}
	}
	if err != nil {
		return site.Principal{}, fmt.Errorf("%w: token: %v", site.ErrUnauthenticated, err)
	}
	if claims.Subject == "" || claims.IssuedAt == nil || claims.UserID == "" {
		return site.Principal{}, fmt.Errorf("%w: token without subject, user id or issue time (made before this version of wharf: create a new one)", site.ErrUnauthenticated)
	}
	if life := claims.ExpiresAt.Sub(claims.IssuedAt.Time); life > TokenTTL {
		return site.Principal{}, fmt.Errorf("%w: token valid for %v, longer than %v", site.ErrUnauthenticated, life, TokenTTL)
	}
	u, level, err := d.findUser(ctx, claims.Subject)
	if errors.Is(err, ErrNotFound) {
		return site.Principal{}, fmt.Errorf("%w: token of removed user %s", site.ErrUnauthenticated, claims.Subject)
	}
	if err != nil {
		return site.Principal{}, fmt.Errorf("check token: %w", d.busy(ctx, err))
	}
	// A token of another user of the same name (removed and added again)
	// belongs to a removed user; so does one issued before the user was
	// created.
	if claims.UserID != u.ID || claims.IssuedAt.Before(u.CreatedAt.Truncate(time.Second)) {
		return site.Principal{}, fmt.Errorf("%w: token of removed user %s", site.ErrUnauthenticated, claims.Subject)
	}
	return site.Principal{
		Kind:    "user",
		Name:    u.Name,
		Orgs:    u.Orgs,
		Level:   level,
		Expires: claims.ExpiresAt.Time,
	}, nil
}

// oidcToken checks a token of the external issuer and finds its user.
func (d *DB) oidcToken(ctx context.Context, token string) (site.Principal, error) {
	name, exp, err := d.OIDC.verify(ctx, token, d.now)
	if err != nil {
		return site.Principal{}, fmt.Errorf("%w: %v", site.ErrUnauthenticated, err)
	}
	// The issuer's answer is not the pool's wait: only the query is.
	ctx, cancel := d.bounded(ctx)
	defer cancel()
	u, level, err := d.findUser(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return site.Principal{}, fmt.Errorf("%w: %s is not a wharf user (wharf user add)", site.ErrUnauthenticated, name)
	}
	if err != nil {
		return site.Principal{}, fmt.Errorf("check token: %w", d.busy(ctx, err))
	}
	return site.Principal{Kind: "user", Name: u.Name, Orgs: u.Orgs, Level: level, Expires: exp}, nil
}
