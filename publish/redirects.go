package publish

import (
	"bytes"
	"fmt"
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

// Redirects lists every short URL of the spec for the releases of m:
// /{build}/{name} and /latest/{build}/{name} for the newest release,
// /preview/{build}/{name} for the newest preview, /{V}/{build}/{name} for
// every version, each also followed by /sig, and a rewrite of every
// canonical URL + /sig to its .sig object. The build "macos" is an alias
// of "mac". Paths are from the root of the tree.
func Redirects(m *Manifest) []RedirectRule {
	var rules []RedirectRule
	short := func(prefix string, a Artifact) {
		for _, build := range buildNames(a.Build) {
			from := fmt.Sprintf("%s/%s/%s", prefix, build, a.Name)
			rules = append(rules,
				RedirectRule{from, "/" + a.Key, 302},
				RedirectRule{from + "/sig", "/" + a.Key + "/sig", 302})
		}
	}
	if v, ok := m.Newest(KindRelease); ok {
		r, _ := m.Find(v.String())
		for _, a := range r.Artifacts {
			short("", a)
		}
		for _, a := range r.Artifacts {
			short("/latest", a)
		}
	}
	if v, ok := m.Newest(KindPreview); ok {
		r, _ := m.Find(v.String())
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
