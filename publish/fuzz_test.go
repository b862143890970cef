package publish_test

import (
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/publish"
)

// FuzzParseVersion: a version that parses prints back as itself (one
// spelling per version), orders equal to itself, and is safe as a path
// element; anything else is ErrVersionMalformed.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"26.1.2", "26.1.3-pre.4", "00.1.1", "99.999999999.1", "26.01.1", "26.1.0", "26.1.1-pre.0",
		"26.1.1-rc.1", "2026.1.1", "26.1", "26.1.1.1", "-pre.1", "26.1.1-pre.", "26.1.1-", "", "٢٦.1.1", "26.1.1\n", "+1.1.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := publish.ParseVersion(s)
		if err != nil {
			if !errors.Is(err, publish.ErrVersionMalformed) {
				t.Fatalf("ParseVersion(%q) = %v, not ErrVersionMalformed", s, err)
			}
			return
		}
		if v.String() != s {
			t.Fatalf("ParseVersion(%q).String() = %q", s, v.String())
		}
		if v.Compare(v) != 0 {
			t.Fatalf("%s does not equal itself", v)
		}
		if v.Feature < 1 || v.Patch < 1 || v.Commits < 0 || v.Year < 0 || v.Year > 99 {
			t.Fatalf("ParseVersion(%q) = %+v out of range", s, v)
		}
		if err := publish.CheckKey("bin/" + s + "/SHA256SUMS"); err != nil {
			t.Fatalf("version %q makes a bad key: %v", s, err)
		}
		rel := publish.Version{Year: v.Year, Feature: v.Feature, Patch: v.Patch}
		if v.IsPreview() && v.Compare(rel) >= 0 {
			t.Fatalf("preview %s does not sort before its release %s", v, rel)
		}
	})
}

// FuzzCheckKey: an accepted key is relative, clean and free of control
// characters, so a store can join it to its root.
func FuzzCheckKey(f *testing.F) {
	for _, s := range []string{"latest", "bin/26.1.2/engine-26.1.2-linux-amd64.tar.gz", "", "/etc/passwd", "a/../b", "..", ".",
		"a//b", "a/", `a\b`, "a\x00b", "a/./b", "...", "a/..b", strings.Repeat("a", 1025), "é/ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := publish.CheckKey(key)
		if err != nil {
			if !errors.Is(err, publish.ErrInvalidKey) {
				t.Fatalf("CheckKey(%q) = %v, not ErrInvalidKey", key, err)
			}
			return
		}
		if path.Clean(key) != key || path.IsAbs(key) || key == "." {
			t.Fatalf("CheckKey accepted %q, which is not a clean relative path", key)
		}
		for _, el := range strings.Split(key, "/") {
			if el == ".." {
				t.Fatalf("CheckKey accepted %q with a \"..\" element", key)
			}
		}
		if strings.ContainsAny(key, "\x00\\\n\r") {
			t.Fatalf("CheckKey accepted %q with NUL, newline or backslash", key)
		}
		if len(key) > 1024 {
			t.Fatalf("CheckKey accepted %d bytes", len(key))
		}
	})
}
