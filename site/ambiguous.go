package site

import (
	"fmt"
	"net/http"
	"strings"
)

// ambiguous refuses (ErrUnauthenticated) a request whose credentials can
// be read in more than one way: Authorization given more than once, or
// more than one cookie whose name is the session cookie's in any case.
// Readers differ on those (Go takes the first exact name with a valid
// value; nginx's $cookie_ the first name in any case, raw), so a proxy
// keyed on one reading must never see wharf decide on another.
// Cookies are split at ';' and at ',' (nginx splits at both), so every
// name any reader sees is counted.
func ambiguous(h http.Header) error {
	if len(h.Values("Authorization")) > 1 {
		return fmt.Errorf("%w: the Authorization header is given more than once", ErrUnauthenticated)
	}
	n := 0
	for _, line := range h.Values("Cookie") {
		for _, part := range strings.FieldsFunc(line, func(c rune) bool { return c == ';' || c == ',' }) {
			name, _, _ := strings.Cut(part, "=")
			if strings.EqualFold(strings.Trim(name, " \t"), SessionCookie) {
				n++
			}
		}
	}
	if n > 1 {
		return fmt.Errorf("%w: %d session cookies (%s, in any case): log out, or clear this site's cookies, and log in again", ErrUnauthenticated, n, SessionCookie)
	}
	return nil
}
