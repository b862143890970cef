package publish_test

import (
	"bytes"
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

// FuzzReadManifest: a releases.json from the store, whatever its bytes,
// either is refused or decodes to a manifest that encodes the same way
// after a second read (what one publisher writes, the next reads back
// unchanged).
func FuzzReadManifest(f *testing.F) {
	f.Add([]byte(`{"schema":1,"releases":[{"version":"26.1.2","kind":"release","published":"2026-03-01T12:00:00Z",` +
		`"artifacts":[{"name":"engine","kind":"binary","build":"x86","os":"linux","platform":"amd64",` +
		`"key":"bin/26.1.2/engine-26.1.2-linux-amd64.tar.gz","size":3,"sha256":"ab","signature":"MEU=","access":"basic"}]},` +
		`{"version":"26.1.3-pre.1","kind":"preview","published":"2026-03-02T12:00:00+02:00","artifacts":[]}]}`))
	for _, s := range []string{`{}`, `{"schema":2}`, `{"releases":[{"version":"x"},{"version":"26.1.1"}]}`, `[]`, `null`, ``,
		`{"releases":[{"published":"2026-03-01T12:00:00.123456789-07:00"}]}`, `{"schema":1}{"schema":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := publish.ReadManifest(bytes.NewReader(b))
		if err != nil {
			return
		}
		var first bytes.Buffer
		if err := m.Encode(&first); err != nil {
			return // e.g. a year JSON cannot hold
		}
		m2, err := publish.ReadManifest(bytes.NewReader(first.Bytes()))
		if err != nil {
			t.Fatalf("a manifest wharf wrote does not read back: %v\n%s", err, first.Bytes())
		}
		var second bytes.Buffer
		if err := m2.Encode(&second); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("encode, read, encode changed the manifest:\n%s\n---\n%s", first.Bytes(), second.Bytes())
		}
	})
}

// FuzzParseConfig: wharf.toml is either refused or gives a configuration
// that validates, with every artifact's access and kind filled in.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"[[artifact]]\nname = \"engine\"\nkind = \"binary\"\n",
		"[[artifact]]\nname = \"treasury-cli\"\nkind = \"binary\"\nexecutable = \"treasury\"\naccess = \"public\"\n" +
			"[[artifact]]\nname = \"treasury-node\"\nkind = \"image\"\n",
		"", "[[artifact]]\n", "[[artifact]]\nname = \"../x\"\nkind = \"binary\"\n", "artifact = 1", "[[artifact]]\nnmae = \"x\"\n",
		"[[artifact]]\nname = \"x\"\nkind = \"image\"\nexecutable = \"y\"\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := publish.ParseConfig(strings.NewReader(s))
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("ParseConfig(%q) gave a configuration that does not validate: %v", s, err)
		}
		for _, a := range c.Artifacts {
			if a.Access == "" || (a.Kind != publish.KindBinary && a.Kind != publish.KindImage) {
				t.Fatalf("ParseConfig(%q): artifact %+v", s, a)
			}
			if a.Kind == publish.KindBinary && a.Executable == "" {
				t.Fatalf("ParseConfig(%q): binary %s without an executable", s, a.Name)
			}
		}
	})
}
