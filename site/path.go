package site

import (
	"errors"
	"net/url"
	"strings"

	"github.com/wharfhq/wharf/publish"
)

// kind is what a request path names.
type kind int

const (
	kindNotFound  kind = iota
	kindPage           // "/", /login, /logout, /static/...: the browser page
	kindHealth         // /healthz
	kindMetrics        // /metrics
	kindTop            // /latest, /preview, /dl.pub, /install, /releases.json
	kindShort          // /{build}/{name} and /{tag}/{build}/{name}
	kindCanonical      // /bin/{version}/{file}, /img/{version}/{file}
	kindAuth           // /_wharf/auth: may the request's credentials have a path? (nginx auth_request, Caddy forward_auth)
	kindRegistry       // /v2/...: the registry's read API (registry.go)
)

// AuthPath is the path of the endpoint that answers, for a proxy serving
// the tree itself, whether a request's credentials may download the path
// it names (nginx auth_request, Caddy forward_auth).
const AuthPath = "/_wharf/auth"

// route labels a kind in metrics and logs.
func (k kind) route(sig bool) string {
	if sig && (k == kindShort || k == kindCanonical) {
		return map[kind]string{kindShort: "short_sig", kindCanonical: "sig"}[k]
	}
	return [...]string{"not_found", "page", "healthz", "metrics", "top", "short", "canonical", "auth", "registry"}[k]
}

// target is a parsed request path.
type target struct {
	kind  kind
	sig   bool   // followed by /sig (short and canonical)
	key   string // kindTop, kindCanonical: the object key
	tag   string // kindShort: latest, preview or a version
	build string // kindShort
	name  string // kindShort
	// registry is the parsed path of kindRegistry.
	registry registryTarget
}

// errBadPath is a path that tries to leave the tree or is not a path at
// all: dot segments, encoded slashes, backslashes, NUL and other control
// characters. It answers 400.
var errBadPath = errors.New("malformed path")

// topKeys are the top-level objects served as they are, without auth.
var topKeys = map[string]bool{
	publish.KeyLatest:    true,
	publish.KeyPreview:   true,
	publish.KeyPublicKey: true,
	publish.KeyInstall:   true,
	publish.KeyManifest:  true,
	publish.KeyChannel:   true,
	// releases.json.sig: the manifest's signature (wharf verify).
	publish.KeyManifest + ".sig": true,
}

// parsePath parses the escaped path of a request (url.URL.EscapedPath).
// Every key it returns passes publish.CheckKey; it never returns a key with
// a dot segment, a backslash or a control character.
func parsePath(escaped string) (target, error) {
	if len(escaped) > 2048 || !strings.HasPrefix(escaped, "/") {
		return target{}, errBadPath
	}
	lower := strings.ToLower(escaped)
	// Encoded slashes and backslashes would let one segment hold several;
	// refuse them before unescaping.
	for _, bad := range []string{"%2f", "%5c", "%00", "\\"} {
		if strings.Contains(lower, bad) {
			return target{}, errBadPath
		}
	}
	p, err := url.PathUnescape(escaped)
	if err != nil {
		return target{}, errBadPath
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return target{}, errBadPath
		}
	}
	switch {
	case p == "/", p == "/login", p == "/logout", strings.HasPrefix(p, "/static/"):
		if strings.Contains(p, "/./") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") || strings.HasSuffix(p, "/.") {
			return target{}, errBadPath
		}
		return target{kind: kindPage}, nil
	}
	if p == AuthPath {
		return target{kind: kindAuth}, nil
	}
	if registryPath(p) {
		rt, ok := parseRegistryPath(p)
		if !ok {
			return target{kind: kindRegistry, registry: registryTarget{image: "-"}}, nil
		}
		return target{kind: kindRegistry, registry: rt}, nil
	}
	els := strings.Split(p[1:], "/")
	for _, el := range els {
		if el == "." || el == ".." {
			return target{}, errBadPath
		}
		if el == "" {
			return target{}, nil // "//", a trailing slash: not a path of the tree
		}
	}
	sig := len(els) > 1 && els[len(els)-1] == "sig"
	if sig {
		els = els[:len(els)-1]
	}
	switch {
	case len(els) == 1 && !sig:
		switch els[0] {
		case "healthz":
			return target{kind: kindHealth}, nil
		case "metrics":
			return target{kind: kindMetrics}, nil
		}
		if topKeys[els[0]] {
			return target{kind: kindTop, key: els[0]}, nil
		}
	case len(els) == 3 && (els[0] == publish.KindDir(publish.KindBinary) || els[0] == publish.KindDir(publish.KindImage)):
		if _, err := publish.ParseVersion(els[1]); err != nil {
			return target{}, nil
		}
		key := strings.Join(els, "/")
		if publish.CheckKey(key) != nil || !plainFileName(els[2]) {
			return target{}, nil
		}
		return target{kind: kindCanonical, sig: sig, key: key}, nil
	case len(els) == 2:
		if _, ok := publish.LookupBuild(els[0]); ok {
			return target{kind: kindShort, sig: sig, tag: publish.KeyLatest, build: els[0], name: els[1]}, nil
		}
	case len(els) == 3:
		if _, ok := publish.LookupBuild(els[1]); ok {
			return target{kind: kindShort, sig: sig, tag: els[0], build: els[1], name: els[2]}, nil
		}
	}
	return target{}, nil
}

// plainFileName reports whether s is a file name the publisher could have
// written: letters, digits, '.', '-', '_' and '+', not starting with a dot.
func plainFileName(s string) bool {
	if s == "" || s[0] == '.' || len(s) > 255 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case r == '.' || r == '-' || r == '_' || r == '+':
		default:
			return false
		}
	}
	return true
}
