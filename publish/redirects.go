package publish

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"
)

// RedirectRule is a line of _redirects: From answers Status with To.
type RedirectRule struct {
	From   string // a path of the download server, e.g. /x86/engine
	To     string // a path in the tree, e.g. /bin/26.1.2/engine-26.1.2-linux-amd64.tar.gz
	Status int    // 302 redirect, or 200 rewrite (the canonical /sig forms)
}

// RedirectsData is what templates/redirects.tmpl is rendered with.
type RedirectsData struct {
	BaseURL string
	Rules   []RedirectRule
}

// versionPlaceholder stands for any version in a placeholder rule; Netlify
// and Cloudflare Pages substitute it wherever it appears in the target.
const versionPlaceholder = ":version"

// Redirects is the content of _redirects for the releases of m: netlify
// style rules whose number does not grow with the releases. For every
// artifact and build ever published: /{build}/{name} and
// /latest/{build}/{name} to the newest release, /preview/{build}/{name} to
// the newest preview (concrete rules, rewritten at each publish), then one
// placeholder rule /:version/{build}/{name} for every version; each also
// followed by /sig. Two placeholder rules rewrite any canonical URL + /sig
// to its .sig object. The first matching rule wins, so the latest and
// preview rules come before the placeholder that would also match them.
// The build "macos" is an alias of "mac". Paths are from the root of the
// tree.
func Redirects(m *Manifest) []RedirectRule {
	var rules []RedirectRule
	short := func(prefix string, a Artifact, key string) {
		for _, build := range buildNames(a.Build) {
			from := fmt.Sprintf("%s/%s/%s", prefix, build, a.Name)
			rules = append(rules,
				RedirectRule{from, "/" + key, 302},
				RedirectRule{from + "/sig", "/" + key + "/sig", 302})
		}
	}
	if r, ok := newest(m, KindRelease); ok {
		for _, a := range r.Artifacts {
			short("", a, a.Key)
		}
		for _, a := range r.Artifacts {
			short("/latest", a, a.Key)
		}
	}
	if r, ok := newest(m, KindPreview); ok {
		for _, a := range r.Artifacts {
			short("/preview", a, a.Key)
		}
	}
	for _, a := range everyArtifact(m) {
		short("/"+versionPlaceholder, a, placeholderKey(a))
	}
	for _, dir := range []string{KindDir(KindBinary), KindDir(KindImage)} {
		rules = append(rules, RedirectRule{
			"/" + dir + "/:version/:file/sig", "/" + dir + "/:version/:file.sig", 200})
	}
	return rules
}

// ShortURLs lists every short URL of the spec for the releases of m, one
// concrete rule each, with the canonical /sig rewrites: what the rules of
// Redirects expand to, and what the download server answers.
func ShortURLs(m *Manifest) []RedirectRule {
	var rules []RedirectRule
	short := func(prefix string, a Artifact) {
		for _, build := range buildNames(a.Build) {
			from := fmt.Sprintf("%s/%s/%s", prefix, build, a.Name)
			rules = append(rules,
				RedirectRule{from, "/" + a.Key, 302},
				RedirectRule{from + "/sig", "/" + a.Key + "/sig", 302})
		}
	}
	if r, ok := newest(m, KindRelease); ok {
		for _, a := range r.Artifacts {
			short("", a)
			short("/latest", a)
		}
	}
	if r, ok := newest(m, KindPreview); ok {
		for _, a := range r.Artifacts {
			short("/preview", a)
		}
	}
	for _, r := range m.Releases {
		for _, a := range r.Artifacts {
			short("/"+r.Version, a)
		}
	}
	for _, r := range m.Releases {
		for _, a := range r.Artifacts {
			rules = append(rules, RedirectRule{"/" + a.Key + "/sig", "/" + SigKey(a.Key), 200})
		}
	}
	return rules
}

// newest is the newest release of a kind in m.
func newest(m *Manifest, kind string) (*Release, bool) {
	v, ok := m.Newest(kind)
	if !ok {
		return nil, false
	}
	return m.Find(v.String())
}

// everyArtifact is one artifact of every name and build in m, newest
// release first, in the order the releases list them.
func everyArtifact(m *Manifest) []Artifact {
	seen := map[string]bool{}
	var out []Artifact
	for _, r := range m.Releases {
		for _, a := range r.Artifacts {
			id := a.Kind + "/" + a.Name + "/" + a.Build
			if !seen[id] {
				seen[id] = true
				out = append(out, a)
			}
		}
	}
	return out
}

// placeholderKey is the key of a with its version replaced by :version.
func placeholderKey(a Artifact) string {
	v := strings.Split(a.Key, "/")[1]
	return strings.ReplaceAll(a.Key, v, versionPlaceholder)
}

// buildNames are the path segments that name a build: mac also as macos.
func buildNames(build string) []string {
	if build == "mac" {
		return []string{"mac", "macos"}
	}
	return []string{build}
}

// renderRedirects renders _redirects for m.
func renderRedirects(t *template.Template, m *Manifest, baseURL string) ([]byte, error) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, RedirectsData{BaseURL: baseURL, Rules: Redirects(m)}); err != nil {
		return nil, fmt.Errorf("render %s: %w", KeyRedirects, err)
	}
	return buf.Bytes(), nil
}
