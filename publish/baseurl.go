package publish

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// CheckBaseURL checks the download server's URL that the install script,
// the page and the redirect rules are rendered with. It must be an
// absolute http(s) URL with a host, no user:password@ (the script and the
// page are public), no query or fragment, and only the characters of a
// plain URL (letters, digits, - . _ ~ : / % [ ]): it ends up inside shell
// commands that users copy, where quotes, $ or backquotes would run code.
func CheckBaseURL(s string) error {
	const rule = "want an absolute http(s) URL such as https://dl.example.com"
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("base URL %s: %s", shownURL(s, u, err), rule)
	}
	if u.User != nil {
		return fmt.Errorf("base URL %s: user:password@ would be published in the install script and the page; give the URL customers use, without credentials", shownURL(s, u, err))
	}
	if u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(s, "?#") {
		return fmt.Errorf("base URL %q: no query or fragment; %s", s, rule)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~:/%[]", r)) {
			return fmt.Errorf("base URL %q: character %q is not allowed (letters, digits and - . _ ~ : / %% [ ] only)", s, r)
		}
	}
	return nil
}

// shownURL quotes a refused base URL for its error without the password
// of a user:password@ (errors end up in CI logs).
func shownURL(s string, u *url.URL, err error) string {
	switch {
	case err == nil && u.User != nil:
		return strconv.Quote(u.Redacted())
	case err != nil && strings.Contains(s, "@"):
		return "(not shown: it may hold user:password@)"
	}
	return strconv.Quote(s)
}
