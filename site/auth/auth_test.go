package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/site"
	"github.com/wharfhq/wharf/site/auth"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// clock is a settable clock for the tests.

// backends runs f against a fresh SQLite file and a fresh PostgreSQL database.
func backends(t *testing.T, f func(t *testing.T, db *auth.DB, c *testenv.Clock)) {
	t.Helper()
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			var dsn string
			if name == "sqlite" {
				dsn = filepath.Join(t.TempDir(), "wharf.db")
			} else {
				dsn = testenv.Postgres(t)
			}
			db := mustOpen(t, dsn)
			c := testenv.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			db.Now = c.Now
			f(t, db, c)
		})
	}
}

func mustOpen(tb testing.TB, dsn string) *auth.DB {
	tb.Helper()
	db, err := auth.Open(context.Background(), dsn)
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func TestOrgs(t *testing.T) {
	backends(t, func(t *testing.T, db *auth.DB, _ *testenv.Clock) {
		ctx := context.Background()
		if _, err := db.CreateOrg(ctx, "acme", site.LevelBasic); err != nil {
			t.Fatal(err)
		}
		if _, err := db.CreateOrg(ctx, "globex", site.LevelFull); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name, org, level string
			want             error
		}{
			{"ErrExists", "acme", site.LevelFull, auth.ErrExists},
			{"ErrInvalidLevel", "initech", "admin", auth.ErrInvalid},
			{"ErrInvalidName", "a b", site.LevelBasic, auth.ErrInvalid},
			{"ErrInvalidEmpty", "", site.LevelBasic, auth.ErrInvalid},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if _, err := db.CreateOrg(ctx, tt.org, tt.level); !errors.Is(err, tt.want) {
					t.Errorf("CreateOrg(%q, %q) = %v, want %v", tt.org, tt.level, err, tt.want)
				}
			})
		}
		t.Run("SetLevel", func(t *testing.T) {
			if err := db.SetOrgLevel(ctx, "acme", site.LevelFull); err != nil {
				t.Fatal(err)
			}
			if err := db.SetOrgLevel(ctx, "nope", site.LevelFull); !errors.Is(err, auth.ErrNotFound) {
				t.Errorf("SetOrgLevel(nope) = %v, want ErrNotFound", err)
			}
			if err := db.SetOrgLevel(ctx, "acme", "root"); !errors.Is(err, auth.ErrInvalid) {
				t.Errorf("SetOrgLevel(root) = %v, want ErrInvalid", err)
			}
		})
		orgs, err := db.Orgs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range orgs {
			got = append(got, o.Name+":"+o.Level)
		}
		if want := "acme:full,globex:full"; strings.Join(got, ",") != want {
			t.Errorf("Orgs = %v, want %s", got, want)
		}
	})
}

func TestAPIKey(t *testing.T) {
	backends(t, func(t *testing.T, db *auth.DB, c *testenv.Clock) {
		ctx := context.Background()
		mustOrg(t, db, "acme", site.LevelBasic)
		k, secret, err := db.CreateAPIKey(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(k.Hash, secret) || k.Hash == secret {
			t.Fatal("the secret is stored")
		}
		if _, _, err := db.CreateAPIKey(ctx, "nope"); !errors.Is(err, auth.ErrNotFound) {
			t.Errorf("CreateAPIKey(nope) = %v, want ErrNotFound", err)
		}

		t.Run("OK", func(t *testing.T) {
			p, err := db.APIKey(ctx, secret)
			if err != nil {
				t.Fatal(err)
			}
			if p.Kind != "apikey" || p.Name != k.ID || p.Level != site.LevelBasic || len(p.Orgs) != 1 || p.Orgs[0] != "acme" {
				t.Errorf("APIKey = %+v", p)
			}
			keys, err := db.APIKeys(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) != 1 || !keys[0].LastUsedAt.Equal(c.Now()) {
				t.Errorf("last use = %v, want %v", keys[0].LastUsedAt, c.Now())
			}
		})
		t.Run("LevelFollowsOrg", func(t *testing.T) {
			if err := db.SetOrgLevel(ctx, "acme", site.LevelFull); err != nil {
				t.Fatal(err)
			}
			p, err := db.APIKey(ctx, secret)
			if err != nil || p.Level != site.LevelFull {
				t.Errorf("APIKey = %+v, %v; want level full", p, err)
			}
		})
		for _, bad := range []struct{ name, key string }{
			{"ErrWrongKey", secret[:len(secret)-1] + "x"},
			{"ErrEmpty", ""},
			{"ErrGarbage", "\x00\xff:" + strings.Repeat("a", 4096)},
			{"ErrHashAsKey", k.Hash},
		} {
			t.Run(bad.name, func(t *testing.T) {
				if _, err := db.APIKey(ctx, bad.key); !errors.Is(err, site.ErrUnauthenticated) {
					t.Errorf("APIKey = %v, want ErrUnauthenticated", err)
				}
			})
		}
		t.Run("ErrRevoked", func(t *testing.T) {
			if err := db.RevokeAPIKey(ctx, k.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := db.APIKey(ctx, secret); !errors.Is(err, site.ErrUnauthenticated) {
				t.Errorf("APIKey(revoked) = %v, want ErrUnauthenticated", err)
			}
			if err := db.RevokeAPIKey(ctx, k.ID); !errors.Is(err, auth.ErrNotFound) {
				t.Errorf("RevokeAPIKey twice = %v, want ErrNotFound", err)
			}
		})
	})
}

func mustOrg(tb testing.TB, db *auth.DB, name, level string) {
	tb.Helper()
	if _, err := db.CreateOrg(context.Background(), name, level); err != nil {
		tb.Fatal(err)
	}
}

func mustUser(tb testing.TB, db *auth.DB, name, org string) {
	tb.Helper()
	if err := db.AddUser(context.Background(), name, org); err != nil {
		tb.Fatal(err)
	}
}

func TestToken(t *testing.T) {
	backends(t, func(t *testing.T, db *auth.DB, c *testenv.Clock) {
		ctx := context.Background()
		mustOrg(t, db, "acme", site.LevelBasic)
		mustOrg(t, db, "globex", site.LevelFull)
		mustUser(t, db, "alice", "acme")
		mustUser(t, db, "alice", "globex")
		mustUser(t, db, "alice", "globex") // again: a no-op
		mustUser(t, db, "bob", "acme")
		tok, exp, err := db.CreateToken(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if want := c.Now().Add(24 * time.Hour); !exp.Equal(want) {
			t.Errorf("expiry = %v, want %v", exp, want)
		}
		if _, _, err := db.CreateToken(ctx, "nobody"); !errors.Is(err, auth.ErrNotFound) {
			t.Errorf("CreateToken(nobody) = %v, want ErrNotFound", err)
		}

		t.Run("OK", func(t *testing.T) {
			p, err := db.Token(ctx, tok)
			if err != nil {
				t.Fatal(err)
			}
			if p.Kind != "user" || p.Name != "alice" || p.Level != site.LevelFull || strings.Join(p.Orgs, ",") != "acme,globex" || !p.Expires.Equal(exp) {
				t.Errorf("Token = %+v", p)
			}
		})
		t.Run("OKAlmostExpired", func(t *testing.T) {
			c.Advance(24*time.Hour - time.Second)
			defer c.Advance(-(24*time.Hour - time.Second))
			if _, err := db.Token(ctx, tok); err != nil {
				t.Errorf("Token one second before expiry: %v", err)
			}
		})

		other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		parsed, _, err := jwt.NewParser().ParseUnverified(tok, &jwt.RegisteredClaims{})
		if err != nil {
			t.Fatal(err)
		}
		claims := *parsed.Claims.(*jwt.RegisteredClaims)
		kid := parsed.Header["kid"]
		sign := func(m jwt.SigningMethod, key any, mutate func(*jwt.Token)) string {
			t.Helper()
			tk := jwt.NewWithClaims(m, claims)
			tk.Header["kid"] = kid
			if mutate != nil {
				mutate(tk)
			}
			s, err := tk.SignedString(key)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		parts := strings.Split(tok, ".")
		bad := []struct{ name, token string }{
			{"ErrMalformed", "not-a-jwt"},
			{"ErrEmpty", ""},
			{"ErrTruncated", parts[0] + "." + parts[1]},
			{"ErrTamperedPayload", parts[0] + "." + strings.TrimRight(parts[1], "=") + "A." + parts[2]},
			{"ErrWrongKey", sign(jwt.SigningMethodES256, other, nil)},
			{"ErrUnknownKid", sign(jwt.SigningMethodES256, other, func(tk *jwt.Token) { tk.Header["kid"] = "0000" })},
			{"ErrAlgNone", sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, nil)},
			{"ErrHS256", sign(jwt.SigningMethodHS256, []byte(kid.(string)), nil)},
			{"ErrAlgNoneHeaderOnly", noneHeader(parts)},
		}
		for _, tt := range bad {
			t.Run(tt.name, func(t *testing.T) {
				if _, err := db.Token(ctx, tt.token); !errors.Is(err, site.ErrUnauthenticated) {
					t.Errorf("Token = %v, want ErrUnauthenticated", err)
				}
			})
		}
		t.Run("ErrExpired", func(t *testing.T) {
			c.Advance(24*time.Hour + time.Second)
			defer c.Advance(-(24*time.Hour + time.Second))
			_, err := db.Token(ctx, tok)
			var expired *site.ExpiredError
			if !errors.Is(err, site.ErrUnauthenticated) || !errors.As(err, &expired) || !expired.Expired.Equal(exp) {
				t.Errorf("Token after a day = %v, want an ExpiredError at %v", err, exp)
			}
			// Only a token signed by the issuer key is said to expire: a
			// forged one is refused as forged, whatever its exp.
			if _, err := db.Token(ctx, sign(jwt.SigningMethodES256, other, nil)); !errors.Is(err, site.ErrUnauthenticated) || errors.As(err, &expired) {
				t.Errorf("forged token after a day = %v, want ErrUnauthenticated and no ExpiredError", err)
			}
		})
		t.Run("ErrRemovedUser", func(t *testing.T) {
			if err := db.RemoveUser(ctx, "alice", ""); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Token(ctx, tok); !errors.Is(err, site.ErrUnauthenticated) {
				t.Errorf("Token of removed user = %v, want ErrUnauthenticated", err)
			}
			// Re-creating the name does not revive the old token.
			c.Advance(time.Minute)
			mustUser(t, db, "alice", "acme")
			if _, err := db.Token(ctx, tok); !errors.Is(err, site.ErrUnauthenticated) {
				t.Errorf("old token of re-created user = %v, want ErrUnauthenticated", err)
			}
		})
		t.Run("NoOrgNoLevel", func(t *testing.T) {
			btok, _, err := db.CreateToken(ctx, "bob")
			if err != nil {
				t.Fatal(err)
			}
			if err := db.RemoveUser(ctx, "bob", "acme"); err != nil {
				t.Fatal(err)
			}
			p, err := db.Token(ctx, btok)
			if err != nil || p.Level != "" || len(p.Orgs) != 0 {
				t.Errorf("Token of user without org = %+v, %v; want no level", p, err)
			}
		})
	})
}

// noneHeader swaps the header of a valid token for {"alg":"none"} and
// drops the signature.
func noneHeader(parts []string) string {
	return "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + parts[1] + "."
}

// TestIssuerKeyShared: a token created through one connection (wharf token
// create) is accepted through another (wharf serve), and the key survives a
// reopen.
func TestIssuerKeyShared(t *testing.T) {
	ctx := context.Background()
	dsn := filepath.Join(t.TempDir(), "wharf.db")
	a := mustOpen(t, dsn)
	mustOrg(t, a, "acme", site.LevelFull)
	mustUser(t, a, "alice", "acme")
	b := mustOpen(t, dsn)
	p, err := b.Token(ctx, mustToken(t, a, "alice"))
	if err != nil || p.Name != "alice" {
		t.Fatalf("Token = %+v, %v", p, err)
	}
	a.Close()
	c := mustOpen(t, dsn)
	if _, err := c.Token(ctx, mustToken(t, b, "alice")); err != nil {
		t.Fatalf("after reopen: %v", err)
	}
}

func mustToken(tb testing.TB, db *auth.DB, user string) string {
	tb.Helper()
	tok, _, err := db.CreateToken(context.Background(), user)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// TestOpenConcurrent: `wharf serve` and an admin command opening a new
// database file at once both get it, migrated once.
func TestOpenConcurrent(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "wharf.db")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			db, err := auth.Open(context.Background(), dsn)
			if err == nil {
				_, err = db.Orgs(context.Background())
				db.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// TestTokenHardening: only canonical (low-S) signatures, lifetimes up to a
// day, and tokens bound to the user's identity rather than its name.
func TestTokenHardening(t *testing.T) {
	backends(t, func(t *testing.T, db *auth.DB, c *testenv.Clock) {
		ctx := context.Background()
		mustOrg(t, db, "acme", site.LevelBasic)
		mustUser(t, db, "alice", "acme")
		tok, _, err := db.CreateToken(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		parsed, _, err := jwt.NewParser().ParseUnverified(tok, jwt.MapClaims{})
		if err != nil {
			t.Fatal(err)
		}
		claims := parsed.Claims.(jwt.MapClaims)

		t.Run("ErrHighS", func(t *testing.T) {
			// (r, N-s) is the same signature in its other, high-S form.
			i := strings.LastIndexByte(tok, '.')
			raw, _ := base64.RawURLEncoding.DecodeString(tok[i+1:])
			s := new(big.Int).SetBytes(raw[32:])
			s.Sub(elliptic.P256().Params().N, s)
			s.FillBytes(raw[32:])
			high := tok[:i+1] + base64.RawURLEncoding.EncodeToString(raw)
			if _, err := db.Token(ctx, high); !errors.Is(err, site.ErrUnauthenticated) {
				t.Errorf("Token(high S) = %v, want ErrUnauthenticated", err)
			}
		})
		t.Run("LowSAlways", func(t *testing.T) {
			half := new(big.Int).Rsh(elliptic.P256().Params().N, 1)
			for range 20 {
				tk, _, err := db.CreateToken(ctx, "alice")
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := base64.RawURLEncoding.DecodeString(tk[strings.LastIndexByte(tk, '.')+1:])
				if new(big.Int).SetBytes(raw[32:]).Cmp(half) > 0 {
					t.Fatal("CreateToken made a high-S signature")
				}
				if _, err := db.Token(ctx, tk); err != nil {
					t.Fatal(err)
				}
			}
		})
		t.Run("ErrLifetimeOverADay", func(t *testing.T) {
			long := jwt.MapClaims{}
			for k, v := range claims {
				long[k] = v
			}
			long["exp"] = claims["iat"].(float64) + (24*time.Hour + time.Second).Seconds()
			forged, err := db.SignForTest(ctx, long)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Token(ctx, forged); !errors.Is(err, site.ErrUnauthenticated) {
				t.Errorf("Token(25 h) = %v, want ErrUnauthenticated", err)
			}
			long["exp"] = claims["iat"].(float64) + (24 * time.Hour).Seconds()
			day, _ := db.SignForTest(ctx, long)
			if _, err := db.Token(ctx, day); err != nil {
				t.Errorf("Token(24 h) = %v", err)
			}
		})
		t.Run("ErrNoUserID", func(t *testing.T) {
			old := jwt.MapClaims{}
			for k, v := range claims {
				if k != "uid" {
					old[k] = v
				}
			}
			forged, _ := db.SignForTest(ctx, old)
			if _, err := db.Token(ctx, forged); !errors.Is(err, site.ErrUnauthenticated) {
				t.Errorf("Token(no uid) = %v, want ErrUnauthenticated", err)
			}
		})
		t.Run("ErrReaddedSameSecond", func(t *testing.T) {
			// Removed and added again within the same second: the old
			// token belongs to the removed user.
			if err := db.RemoveUser(ctx, "alice", ""); err != nil {
				t.Fatal(err)
			}
			mustUser(t, db, "alice", "acme")
			if _, err := db.Token(ctx, tok); !errors.Is(err, site.ErrUnauthenticated) {
				t.Errorf("old token of re-added user = %v, want ErrUnauthenticated", err)
			}
			fresh, _, err := db.CreateToken(ctx, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Token(ctx, fresh); err != nil {
				t.Errorf("new token of re-added user: %v", err)
			}
		})
	})
}

// TestRevokedSessions: a logged-out session stays refused until it would
// have expired; records of expired sessions are deleted, so the table
// holds only the live ones however many logouts there were.
func TestRevokedSessions(t *testing.T) {
	backends(t, func(t *testing.T, db *auth.DB, c *testenv.Clock) {
		ctx := context.Background()
		for i := range 50 {
			if err := db.RevokeSession(ctx, fmt.Sprint("old-", i), c.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.RevokeSession(ctx, "s1", c.Now().Add(3*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if ok, err := db.SessionRevoked(ctx, "s1"); err != nil || !ok {
			t.Errorf("SessionRevoked(s1) = %v, %v; want true", ok, err)
		}
		if ok, _ := db.SessionRevoked(ctx, "s2"); ok {
			t.Error("SessionRevoked(s2) = true for a session never logged out")
		}
		c.Advance(2 * time.Hour)
		if err := db.RevokeSession(ctx, "s2", c.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if n, err := db.RevokedSessionsForTest(ctx); err != nil || n != 2 {
			t.Errorf("records kept = %d, %v; want 2 (the expired ones deleted)", n, err)
		}
		if ok, _ := db.SessionRevoked(ctx, "s1"); !ok {
			t.Error("s1 no longer revoked before its expiry")
		}
		c.Advance(2 * time.Hour)
		if ok, _ := db.SessionRevoked(ctx, "s1"); ok {
			t.Error("s1 still listed after its expiry")
		}
	})
}

// TestTokenUserAddedBeforeIDs: a user added before users had ids gets one
// with its first new token, and the token works.
func TestTokenUserAddedBeforeIDs(t *testing.T) {
	backends(t, func(t *testing.T, db *auth.DB, c *testenv.Clock) {
		ctx := context.Background()
		mustOrg(t, db, "acme", site.LevelBasic)
		mustUser(t, db, "old", "acme")
		if err := db.ForgetUserIDForTest(ctx, "old"); err != nil {
			t.Fatal(err)
		}
		tok, _, err := db.CreateToken(ctx, "old")
		if err != nil {
			t.Fatal(err)
		}
		if p, err := db.Token(ctx, tok); err != nil || p.Name != "old" {
			t.Errorf("Token = %+v, %v", p, err)
		}
		again, _, _ := db.CreateToken(ctx, "old")
		if _, err := db.Token(ctx, tok); err != nil {
			t.Errorf("the first token stopped working after a second one: %v", err)
		}
		if _, err := db.Token(ctx, again); err != nil {
			t.Errorf("second token: %v", err)
		}
	})
}
