package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
)

// provenanceArgs are publish's flags for a build known by its CI, of the
// release v.
func provenanceArgs(v string) []string {
	return []string{"--builder-id", "https://ci.example.com/release", "--source-repo", "https://git.example.com/treasury",
		"--source-commit", strings.Repeat("c0ffee", 6) + "c0ff", "--source-ref", "refs/tags/v" + v}
}

// attestedInputDir is demoInputDir with a build job's CycloneDX SBOM
// beside every image input (IMAGE-PLATFORM.tar.cdx.json), naming its
// SHA-256.
func attestedInputDir(t *testing.T, label string) string {
	t.Helper()
	dir := demoInputDir(t, label)
	tars, err := filepath.Glob(filepath.Join(dir, "*.tar"))
	if err != nil || len(tars) == 0 {
		t.Fatalf("no image inputs in %s (%v)", dir, err)
	}
	for _, f := range tars {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		bom := fmt.Appendf(nil, `{"bomFormat":"CycloneDX","specVersion":"1.6","version":1,"metadata":{"component":{"type":"container","name":%q,"hashes":[{"alg":"SHA-256","content":"%x"}]}},"components":[{"type":"library","name":"openssl","version":"3.0.15"}]}`,
			strings.TrimSuffix(filepath.Base(f), ".tar"), sha256.Sum256(b))
		writeTestFile(t, f+".cdx.json", bom)
	}
	return dir
}

// TestHostingAttestations: an artifact's attestations are served by wharf
// serve and by the nginx and Caddy recipes with the artifact's access
// class (a full image's SBOM to full credentials only), as the in-toto
// storage convention types them, and cached as each server caches the
// artifact (a shared cache keeps a public one a year, a non-public one
// never).
func TestHostingAttestations(t *testing.T) {
	testenv.Tool(t, "nginx")
	testenv.Tool(t, "caddy")
	d := newDiffTree(t)
	servers := map[string]string{"wharf": d.wharf, "nginx": d.proxy(t, "nginx").Addr, "caddy": d.proxy(t, "caddy").Addr}
	raw, err := os.ReadFile(filepath.Join(d.store, publish.KeyManifest))
	if err != nil {
		t.Fatal(err)
	}
	m, err := publish.ReadManifest(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	creds := []diffCred{d.creds[0], d.creds[1], d.creds[3]} // anonymous, basic, full
	want := func(access string, l level) int {
		switch {
		case access == publish.AccessPublic:
			return 200
		case l == levelAnon:
			return 401
		case access == publish.AccessFull && l == levelBasic:
			return 403
		}
		return 200
	}
	kinds := map[string]int{}
	for _, rel := range m.Releases {
		for _, a := range rel.Artifacts {
			if len(a.Attestations) == 0 {
				t.Errorf("%s has no attestation", a.Key)
			}
			for _, at := range a.Attestations {
				kinds[at.PredicateType+" "+a.Access]++
				body, err := os.ReadFile(filepath.Join(d.store, at.Key))
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range creds {
					for name, addr := range servers {
						resp := rawDo(t, addr, "GET /"+at.Key+" HTTP/1.1\r\nHost: "+addr+"\r\n"+headerLines(c.header)+"Connection: close\r\n\r\n", "GET")
						if code := want(a.Access, c.level); resp.status != code {
							t.Errorf("%s: GET /%s as %s (%s artifact) = %d, want %d", name, at.Key, c.name, a.Access, resp.status, code)
							continue
						}
						if resp.status != 200 {
							continue
						}
						if !bytes.Equal(resp.body, body) {
							t.Errorf("%s: GET /%s as %s: not the file's bytes", name, at.Key, c.name)
						}
						if got, want := resp.header.Get("Content-Type"), publish.AttestationContentType(at.PredicateType); got != want {
							t.Errorf("%s: GET /%s: Content-Type %q, want %q", name, at.Key, got, want)
						}
						// As the server caches the artifact (a recipe
						// keeps an artifact public in one release and
						// basic in another private in both).
						of := rawDo(t, addr, "HEAD /"+a.Key+" HTTP/1.1\r\nHost: "+addr+"\r\n"+headerLines(c.header)+"Connection: close\r\n\r\n", "HEAD")
						if got, want := resp.header.Get("Cache-Control"), of.header.Get("Cache-Control"); got != want {
							t.Errorf("%s: GET /%s: Cache-Control %q, its artifact's %q", name, at.Key, got, want)
						}
						if name == "wharf" && resp.header.Get("Cache-Control") != publish.CacheControl(at.Key, a.Access) {
							t.Errorf("wharf: GET /%s: Cache-Control %q, want %q", at.Key, resp.header.Get("Cache-Control"), publish.CacheControl(at.Key, a.Access))
						}
					}
				}
			}
		}
	}
	t.Logf("attestations served, by predicate and access class: %v", kinds)
	if kinds[publish.PredicateCycloneDX+" "+publish.AccessFull] == 0 || kinds[publish.PredicateSLSA+" "+publish.AccessPublic] == 0 || kinds[publish.PredicateSLSA+" "+publish.AccessBasic] == 0 {
		t.Errorf("the tree lacks a kind of attestation or access class: %v", kinds)
	}
	// A file named as an attestation that releases.json does not list (a
	// binary has no SBOM here) is no download: 404 from every server.
	unlisted := "bin/26.1.2/engine-26.1.2-linux-amd64.tar.gz" + ".sbom.intoto.jsonl"
	writeTestFile(t, filepath.Join(d.store, unlisted), []byte("{}\n"))
	for name, addr := range servers {
		resp := rawDo(t, addr, "GET /"+unlisted+" HTTP/1.1\r\nHost: "+addr+"\r\n"+headerLines(creds[2].header)+"Connection: close\r\n\r\n", "GET")
		if resp.status != 404 {
			t.Errorf("%s: GET /%s (not listed) = %d, want 404", name, unlisted, resp.status)
		}
	}
}
