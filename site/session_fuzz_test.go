package site

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// FuzzSessionCookie: a session cookie value, whatever its bytes, opens
// only to the one session sealed with the server's key; anything else,
// including every change the fuzzer makes to the sealed value that alters
// its decoded bytes, is errBadCookie.
func FuzzSessionCookie(f *testing.F) {
	keys, err := newCookieKeys(bytes.Repeat([]byte("k"), 32))
	if err != nil {
		f.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	want := session{Kind: credAPIKey, Cred: "wk_example", Issued: now.Unix(), Expires: now.Add(time.Hour).Unix()}
	sealed, err := keys.seal(want)
	if err != nil {
		f.Fatal(err)
	}
	other, err := newCookieKeys(bytes.Repeat([]byte("o"), 32))
	if err != nil {
		f.Fatal(err)
	}
	forged, err := other.seal(want)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{sealed, forged, "", "v1.", "v1..", "v1.x.y", sealed[:len(sealed)-1], sealed + "A",
		strings.Replace(sealed, "v1.", "v2.", 1), strings.Repeat("v1.", 2000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s, err := keys.open(v, now)
		if err != nil {
			if err != errBadCookie {
				t.Fatalf("open(%q) = %v, want errBadCookie", v, err)
			}
			return
		}
		if s != want {
			t.Fatalf("open(%q) = %+v: a session that was never sealed", v, s)
		}
	})
}
