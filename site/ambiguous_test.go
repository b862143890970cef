package site_test

import (
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/wharfhq/wharf/site"
)

// TestAmbiguousCredentials: a request whose credentials can be read more
// than one way is refused (401), by the downloads wharf serves and by the
// auth endpoint alike: Authorization twice, or more than one session
// cookie in any case, spelling or header (a proxy caching on its own
// reading of one cookie would hand the answer to another request). One
// session cookie beside other cookies, or beside Authorization (which
// wins), is no ambiguity.
func TestAmbiguousCredentials(t *testing.T) {
	e := newPageEnv(t)
	ck := sessionCookie(e.login(t, e.client(t), pageFullKey, ""))
	if ck == nil {
		t.Fatal("login set no session cookie")
	}
	v := ck.Value
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(pageBasicKey+":"))
	full := "Basic " + base64.StdEncoding.EncodeToString([]byte(pageFullKey+":"))
	image := "/img/26.1.1/treasury-node-26.1.1-amd64.tar" // full
	tests := []struct {
		name string
		hdr  []string // name, value pairs, added in order
		want int      // a download wharf serves; the auth endpoint answers 204 for 200
	}{
		{"Session", []string{"Cookie", "wharf_session=" + v}, 200},
		{"SessionBesideOthers", []string{"Cookie", "a=1; wharf_session=" + v + "; wharf_csrf=x"}, 200},
		{"SessionAndAuthorization", []string{"Cookie", "wharf_session=" + v, "Authorization", full}, 200},
		{"AuthorizationWins", []string{"Cookie", "wharf_session=" + v, "Authorization", basic}, 403},
		{"ErrCaseVariantFirst", []string{"Cookie", "WHARF_SESSION=x; wharf_session=" + v}, 401},
		{"ErrCaseVariantAfter", []string{"Cookie", "wharf_session=" + v + "; Wharf_Session=x"}, 401},
		{"ErrDuplicate", []string{"Cookie", "wharf_session=x; wharf_session=" + v}, 401},
		{"ErrDuplicateInvalidFirst", []string{"Cookie", "wharf_session=bad\\value; wharf_session=" + v}, 401},
		{"ErrDuplicateEmptyFirst", []string{"Cookie", "wharf_session=; wharf_session=" + v}, 401},
		{"ErrTwoHeaders", []string{"Cookie", "wharf_session=x", "Cookie", "wharf_session=" + v}, 401},
		{"ErrAfterComma", []string{"Cookie", "a=1, wharf_session=x; wharf_session=" + v}, 401},
		{"ErrInsideQuotes", []string{"Cookie", `a="q,wharf_session=x"; wharf_session=` + v}, 401},
		{"ErrSpaceBeforeEquals", []string{"Cookie", "wharf_session =x; wharf_session=" + v}, 401},
		{"ErrTwoAuthorizations", []string{"Authorization", full, "Authorization", full}, 401},
		{"ErrTwoAuthorizationsWeakFirst", []string{"Authorization", basic, "Authorization", full}, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, auth := range []bool{false, true} {
				path := image
				if auth {
					path = site.AuthPath
				}
				req, err := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				if auth {
					req.Header.Set(site.HeaderForwardURI, image)
				}
				for i := 0; i+1 < len(tt.hdr); i += 2 {
					req.Header.Add(tt.hdr[i], tt.hdr[i+1])
				}
				resp, err := http.DefaultTransport.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				want := tt.want
				if auth && want == 200 {
					want = 204
				}
				if resp.StatusCode != want {
					t.Errorf("GET %s with %q = %d, want %d", path, tt.hdr, resp.StatusCode, want)
				}
			}
		})
	}
}
