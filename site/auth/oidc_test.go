package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"

	"github.com/golang-jwt/jwt/v5"

	"github.com/wharfhq/wharf/site"
	"github.com/wharfhq/wharf/site/auth"
)

// issuer is an OpenID Connect issuer on loopback with an RSA and an EC key.
type issuer struct {
	url  string
	rsa  *rsa.PrivateKey
	ec   *ecdsa.PrivateKey
	hits int
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	is := &issuer{}
	is.rsa, _ = rsa.GenerateKey(rand.Reader, 2048)
	is.ec, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	ecRaw, err := is.ec.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	is.url = srv.URL
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": is.url, "jwks_uri": is.url + "/keys"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, r *http.Request) {
		is.hits++
		json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{
			{"kid": "r1", "kty": "RSA", "use": "sig", "n": b64(is.rsa.N.Bytes()), "e": b64(big.NewInt(int64(is.rsa.E)).Bytes())},
			{"kid": "e1", "kty": "EC", "crv": "P-256", "x": b64(ecRaw[1:33]), "y": b64(ecRaw[33:65])},
		}})
	})
	return is
}

func (is *issuer) token(t *testing.T, m jwt.SigningMethod, kid string, key any, claims jwt.MapClaims) string {
	t.Helper()
	tk := jwt.NewWithClaims(m, claims)
	tk.Header["kid"] = kid
	s, err := tk.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOIDC(t *testing.T) {
	ctx := context.Background()
	is := newIssuer(t)
	db := mustOpen(t, filepath.Join(t.TempDir(), "wharf.db"))
	c := testenv.NewClock(time.Now().UTC())
	db.Now = c.Now
	db.OIDC = &auth.OIDC{Issuer: is.url, Audience: "wharf-dl"}
	mustOrg(t, db, "globex", site.LevelFull)
	mustUser(t, db, "alice@example.com", "globex")
	mustUser(t, db, "bob", "globex")
	claims := func(extra jwt.MapClaims) jwt.MapClaims {
		m := jwt.MapClaims{"iss": is.url, "aud": "wharf-dl", "sub": "u-1", "email": "alice@example.com",
			"iat": c.Now().Unix(), "exp": c.Now().Add(time.Hour).Unix()}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	tests := []struct {
		name  string
		token string
		user  string // "" when refused
	}{
		{"OKRS256Email", is.token(t, jwt.SigningMethodRS256, "r1", is.rsa, claims(nil)), "alice@example.com"},
		{"OKES256Sub", is.token(t, jwt.SigningMethodES256, "e1", is.ec, claims(jwt.MapClaims{"email": nil, "sub": "bob"})), "bob"},
		{"OKAudienceList", is.token(t, jwt.SigningMethodRS256, "r1", is.rsa, claims(jwt.MapClaims{"aud": []string{"x", "wharf-dl"}})), "alice@example.com"},
		{"ErrWrongAudience", is.token(t, jwt.SigningMethodRS256, "r1", is.rsa, claims(jwt.MapClaims{"aud": "other"})), ""},
		{"ErrExpired", is.token(t, jwt.SigningMethodRS256, "r1", is.rsa, claims(jwt.MapClaims{"exp": c.Now().Add(-time.Minute).Unix()})), ""},
		{"ErrNoExpiry", is.token(t, jwt.SigningMethodRS256, "r1", is.rsa, claims(jwt.MapClaims{"exp": nil})), ""},
		{"ErrForgedKey", is.token(t, jwt.SigningMethodRS256, "r1", other, claims(nil)), ""},
		{"ErrUnknownKid", is.token(t, jwt.SigningMethodRS256, "zz", is.rsa, claims(nil)), ""},
		{"ErrKeyAlgMismatch", is.token(t, jwt.SigningMethodES256, "r1", is.ec, claims(nil)), ""},
		{"ErrHS256", is.token(t, jwt.SigningMethodHS256, "r1", []byte("secret"), claims(nil)), ""},
		{"ErrNotAWharfUser", is.token(t, jwt.SigningMethodRS256, "r1", is.rsa, claims(jwt.MapClaims{"email": "eve@example.com"})), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := db.Token(ctx, tt.token)
			if tt.user == "" {
				if !errors.Is(err, site.ErrUnauthenticated) {
					t.Errorf("Token = %+v, %v; want ErrUnauthenticated", p, err)
				}
				return
			}
			if err != nil || p.Name != tt.user || p.Level != site.LevelFull {
				t.Errorf("Token = %+v, %v; want %s at level full", p, err, tt.user)
			}
		})
	}
	if is.hits > 2 {
		t.Errorf("the keys were fetched %d times; unknown kids must not refetch more than once a minute", is.hits)
	}
	t.Run("WharfTokensStillWork", func(t *testing.T) {
		if p, err := db.Token(ctx, mustToken(t, db, "bob")); err != nil || p.Name != "bob" {
			t.Errorf("wharf token with OIDC on: %+v, %v", p, err)
		}
	})
}
