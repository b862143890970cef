package auth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/site"
	"github.com/wharfhq/wharf/site/auth"
)

// TestOIDC checks external tokens against a real issuer: a process of its
// own (internal/testenv/oidcissuer) serving discovery and its key set and
// minting the tokens with keys this test never holds.
func TestOIDC(t *testing.T) {
	ctx := context.Background()
	is := testenv.NewOIDCIssuer(t)
	db := mustOpen(t, filepath.Join(t.TempDir(), "wharf.db"))
	c := testenv.NewClock(time.Now().UTC().Truncate(time.Second))
	db.Now = c.Now
	strict := &auth.OIDC{Issuer: is.URL, Audience: "wharf-dl"}
	bySub := &auth.OIDC{Issuer: is.URL, Audience: "wharf-dl", UserClaim: "sub"}
	mustOrg(t, db, "globex", site.LevelFull)
	mustUser(t, db, "alice@example.com", "globex")
	mustUser(t, db, "bob", "globex")
	claims := func(extra map[string]any) map[string]any {
		m := map[string]any{"iss": is.URL, "aud": "wharf-dl", "sub": "bob", "email": "alice@example.com",
			"email_verified": true, "iat": c.Now().Unix(), "exp": c.Now().Add(time.Hour).Unix()}
		for k, v := range extra {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	rs := func(extra map[string]any) string { return is.Mint(t, "RS256", "r1", nil, claims(extra)) }
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	forged, _ := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims(claims(nil))).SignedString(other)
	hs, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims(claims(nil))).SignedString([]byte("secret"))
	tests := []struct {
		name  string
		oidc  *auth.OIDC
		token string
		user  string // "" when refused
	}{
		{"OKRS256Email", strict, rs(nil), "alice@example.com"},
		{"OKES256", strict, is.Mint(t, "ES256", "e1", nil, claims(nil)), "alice@example.com"},
		{"OKAudienceList", strict, rs(map[string]any{"aud": []string{"x", "wharf-dl"}}), "alice@example.com"},
		{"OKUserClaimSub", bySub, rs(map[string]any{"email": nil, "email_verified": nil}), "bob"},
		{"OKDayLong", strict, rs(map[string]any{"exp": c.Now().Add(auth.TokenTTL).Unix()}), "alice@example.com"},
		{"ErrOtherAudience", strict, rs(map[string]any{"aud": "other-app"}), ""},
		{"ErrNoAudience", strict, rs(map[string]any{"aud": nil}), ""},
		{"ErrNoAudienceConfigured", &auth.OIDC{Issuer: is.URL}, rs(nil), ""},
		{"ErrEmailUnverified", strict, rs(map[string]any{"email_verified": false}), ""},
		{"ErrEmailVerifiedMissing", strict, rs(map[string]any{"email_verified": nil}), ""},
		{"ErrEmailVerifiedString", strict, rs(map[string]any{"email_verified": "true"}), ""},
		{"ErrNoEmailNoFallbackToSub", strict, rs(map[string]any{"email": nil}), ""},
		{"ErrEmailArray", strict, rs(map[string]any{"email": []string{"alice@example.com"}}), ""},
		{"ErrTenYears", strict, rs(map[string]any{"exp": c.Now().AddDate(10, 0, 0).Unix()}), ""},
		{"ErrOverADay", strict, rs(map[string]any{"exp": c.Now().Add(auth.TokenTTL + time.Second).Unix()}), ""},
		{"ErrNoIssuedAt", strict, rs(map[string]any{"iat": nil}), ""},
		{"ErrIssuedInFuture", strict, rs(map[string]any{"iat": c.Now().Add(time.Hour).Unix(), "exp": c.Now().Add(2 * time.Hour).Unix()}), ""},
		{"ErrExpString", strict, rs(map[string]any{"exp": "99999999999"}), ""},
		{"ErrCrit", strict, is.Mint(t, "RS256", "r1", map[string]any{"crit": []string{"exp"}}, claims(nil)), ""},
		{"ErrExpired", strict, rs(map[string]any{"exp": c.Now().Add(-time.Minute).Unix()}), ""},
		{"ErrNoExpiry", strict, rs(map[string]any{"exp": nil}), ""},
		{"ErrOtherIssuer", strict, rs(map[string]any{"iss": is.URL + "/other"}), ""},
		{"ErrForgedKey", strict, forged, ""},
		{"ErrUnknownKid", strict, is.Mint(t, "RS256", "zz", nil, claims(nil)), ""},
		{"ErrKeyAlgMismatch", strict, is.Mint(t, "ES256", "r1", nil, claims(nil)), ""},
		{"ErrHS256", strict, hs, ""},
		{"ErrNotAWharfUser", strict, rs(map[string]any{"email": "eve@example.com"}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db.OIDC = tt.oidc
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
	// Every OIDC config above fetched the keys once; the unknown kid at
	// most once more.
	if n := is.KeyFetches(t); n > 4 {
		t.Errorf("the keys were fetched %d times; unknown kids must not refetch more than once a minute", n)
	}
	t.Run("WharfTokensStillWork", func(t *testing.T) {
		db.OIDC = strict
		if p, err := db.Token(ctx, mustToken(t, db, "bob")); err != nil || p.Name != "bob" {
			t.Errorf("wharf token with OIDC on: %+v, %v", p, err)
		}
	})
}

func TestOIDCCheck(t *testing.T) {
	if err := (&auth.OIDC{Issuer: "https://id.example.com"}).Check(); err == nil || !strings.Contains(err.Error(), "audience") {
		t.Errorf("Check without audience = %v, want an error naming the audience", err)
	}
	if err := (&auth.OIDC{Issuer: "https://id.example.com", Audience: "wharf"}).Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
}

// TestTokenStrictClaims: wharf's own tokens, validly signed, with a crit
// header or times that are not JSON numbers, are refused.
func TestTokenStrictClaims(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t, filepath.Join(t.TempDir(), "wharf.db"))
	mustOrg(t, db, "globex", site.LevelFull)
	mustUser(t, db, "bob", "globex")
	tok := mustToken(t, db, "bob")
	var claims jwt.MapClaims
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	with := func(k string, v any) jwt.MapClaims {
		m := jwt.MapClaims{}
		for k, v := range claims {
			m[k] = v
		}
		m[k] = v
		return m
	}
	ok, _ := db.SignHeaderForTest(ctx, claims, nil)
	if _, err := db.Token(ctx, ok); err != nil {
		t.Fatalf("the same claims, re-signed: %v", err)
	}
	tests := []struct {
		name   string
		claims jwt.MapClaims
		header map[string]any
	}{
		{"ErrCrit", claims, map[string]any{"crit": []string{"b64"}, "b64": false}},
		{"ErrExpString", with("exp", json.Number("99999999999").String()), nil},
		{"ErrIatString", with("iat", "1"), nil},
		{"ErrNbfString", with("nbf", "1"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := db.SignHeaderForTest(ctx, tt.claims, tt.header)
			if err != nil {
				t.Fatal(err)
			}
			if p, err := db.Token(ctx, s); !errors.Is(err, site.ErrUnauthenticated) {
				t.Errorf("Token = %+v, %v; want ErrUnauthenticated", p, err)
			}
		})
	}
}

// TestOIDCSlowIssuer: while the keys are being fetched from a slow issuer
// for a token with an unknown key id, tokens with known key ids are
// checked at once; and tokens that need a fetch under way wait for that
// one instead of starting their own or being refused.
func TestOIDCSlowIssuer(t *testing.T) {
	ctx := context.Background()
	is := testenv.NewOIDCIssuer(t)
	c := testenv.NewClock(time.Now().UTC().Truncate(time.Second))
	newDB := func(t *testing.T) *auth.DB {
		db := mustOpen(t, filepath.Join(t.TempDir(), "wharf.db"))
		db.Now = c.Now
		db.OIDC = &auth.OIDC{Issuer: is.URL, Audience: "wharf-dl"}
		mustOrg(t, db, "globex", site.LevelFull)
		mustUser(t, db, "alice@example.com", "globex")
		return db
	}
	claims := map[string]any{"iss": is.URL, "aud": "wharf-dl", "email": "alice@example.com",
		"email_verified": true, "iat": c.Now().Unix(), "exp": c.Now().Add(time.Hour).Unix()}
	known := is.Mint(t, "RS256", "r1", nil, claims)
	unknownKid := is.Mint(t, "RS256", "zz", nil, claims)
	const logins = 8
	tokens := func(db *auth.DB, tok string) chan error {
		done := make(chan error, logins)
		for range logins {
			go func() {
				_, err := db.Token(ctx, tok)
				done <- err
			}()
		}
		return done
	}

	t.Run("KnownKidDuringFetch", func(t *testing.T) {
		db := newDB(t)
		if _, err := db.Token(ctx, known); err != nil {
			t.Fatalf("first token: %v", err)
		}
		// Later than the refetch limit, a token of an unknown key id
		// makes wharf ask the issuer again, and the issuer does not answer.
		c.Advance(2 * time.Minute)
		is.HoldKeys(t)
		defer is.ReleaseKeys(t)
		unknown := make(chan error, 1)
		go func() {
			_, err := db.Token(ctx, unknownKid)
			unknown <- err
		}()
		is.WaitKeysHeld(t)
		done := tokens(db, known)
		timeout := time.After(10 * time.Second)
		for range logins {
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("known kid during a slow fetch: %v", err)
				}
			case <-timeout:
				t.Fatal("tokens of a known key id waited for a slow issuer's answer to another token's unknown key id")
			}
		}
		is.ReleaseKeys(t)
		if err := <-unknown; !errors.Is(err, site.ErrUnauthenticated) {
			t.Errorf("unknown kid: %v, want ErrUnauthenticated", err)
		}
	})

	t.Run("OneFetchForAll", func(t *testing.T) {
		db := newDB(t)
		before := is.KeyFetches(t)
		is.HoldKeys(t)
		defer is.ReleaseKeys(t)
		first := tokens(db, known)
		is.WaitKeysHeld(t)
		// More tokens whose kid the fetch under way brings: they join
		// it, none is refused for "keys fetched recently".
		more := tokens(db, is.Mint(t, "ES256", "e1", nil, claims))
		is.ReleaseKeys(t)
		for _, ch := range []chan error{first, more} {
			for range logins {
				if err := <-ch; err != nil {
					t.Errorf("a kid the fetch under way brings: %v", err)
				}
			}
		}
		if n := is.KeyFetches(t) - before; n != 1 {
			t.Errorf("%d fetches of the keys for %d tokens that needed one", n, 2*logins)
		}
	})
}
