package site

import (
	"strings"
	"testing"

	"github.com/wharfhq/wharf/publish"
)

// FuzzParsePath: whatever the path, parsePath never panics and every key
// it returns is a safe key of the tree.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{
		"/", "/x86/treasury-cli", "/latest/arm/engine/sig", "/bin/26.1.2/cord-26.1.2-linux-amd64.tar.gz",
		"/img/26.1.2/treasury-node-26.1.2-amd64.tar/sig", "/bin/../../etc/passwd", "/%2e%2e/x", "/bin%2f26.1.2",
		"/a\\b", "/bin/26.1.2/x%00", "/static/../x", "//x", "/latest", "/releases.json", "/bin/26.1.2/.hidden",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		tg, err := parsePath(p)
		if err != nil {
			return
		}
		if tg.key == "" {
			if tg.kind == kindTop || tg.kind == kindCanonical {
				t.Fatalf("parsePath(%q): kind %v without a key", p, tg.kind)
			}
			return
		}
		if err := publish.CheckKey(tg.key); err != nil {
			t.Fatalf("parsePath(%q) = key %q: %v", p, tg.key, err)
		}
		if strings.Contains(tg.key, "..") && tg.kind != kindCanonical {
			t.Fatalf("parsePath(%q) = key %q with ..", p, tg.key)
		}
		for _, el := range strings.Split(tg.key, "/") {
			if el == ".." || el == "." || strings.HasPrefix(el, ".") {
				t.Fatalf("parsePath(%q) = key %q with a dot element", p, tg.key)
			}
		}
		switch tg.kind {
		case kindTop:
			if !topKeys[tg.key] {
				t.Fatalf("parsePath(%q) = top key %q", p, tg.key)
			}
		case kindCanonical:
			if !strings.HasPrefix(tg.key, "bin/") && !strings.HasPrefix(tg.key, "img/") {
				t.Fatalf("parsePath(%q) = canonical key %q outside bin/ and img/", p, tg.key)
			}
		default:
			t.Fatalf("parsePath(%q) = kind %v with key %q", p, tg.kind, tg.key)
		}
	})
}
