package publish_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
)

// netlifyReport is what tools/netlify/check.mjs prints.
type netlifyReport struct {
	Errors  []string `json:"errors"`
	Rules   int      `json:"rules"`
	Dynamic int      `json:"dynamic"`
	Matches map[string]*struct {
		To     string `json:"to"`
		Status int    `json:"status"`
	} `json:"matches"`
}

// netlifyCheck runs Netlify's parser and matcher over a _redirects body,
// matching paths.
func netlifyCheck(t *testing.T, redirects []byte, paths []string) netlifyReport {
	t.Helper()
	node, script := testenv.Netlify(t)
	file := filepath.Join(t.TempDir(), "_redirects")
	if err := os.WriteFile(file, redirects, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script, file)
	cmd.Stdin = strings.NewReader(strings.Join(paths, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("check.mjs: %v\n%s", err, stderr.Bytes())
	}
	var rep netlifyReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("check.mjs printed %q: %v", out, err)
	}
	return rep
}

// TestRedirectsNetlify reads _redirects with Netlify's own parser and
// matcher: no line is refused, every short URL of every release (and every
// canonical URL + /sig) resolves to what wharf serve answers, and the
// number of rules stays the same over further releases and previews.
func TestRedirectsNetlify(t *testing.T) {
	s := dirStore(t, t.TempDir())
	p := newPublisher(t, s, fixedSigner(t))
	mustPublish(t, p, "26.1.1", "one")
	mustPublish(t, p, "26.1.2-pre.3", "pre")
	mustPublish(t, p, "26.1.2", "two")

	check := func(t *testing.T) netlifyReport {
		m := manifest(t, s)
		want := publish.ShortURLs(m)
		paths := make([]string, len(want))
		for i, r := range want {
			paths[i] = r.From
		}
		paths = append(paths, "/nope", "/26.1.1/x86")
		rep := netlifyCheck(t, readKey(t, s, publish.KeyRedirects), paths)
		for _, e := range rep.Errors {
			t.Errorf("netlify-redirect-parser: %s", e)
		}
		for _, r := range want {
			got := rep.Matches[r.From]
			if got == nil || got.To != r.To || got.Status != r.Status {
				t.Errorf("Netlify answers %s with %+v, want %s %d", r.From, got, r.To, r.Status)
			}
		}
		for _, path := range []string{"/nope", "/26.1.1/x86"} {
			if got := rep.Matches[path]; got != nil {
				t.Errorf("Netlify answers %s with %+v, want no rule", path, got)
			}
		}
		return rep
	}
	first := check(t)
	// Cloudflare Pages allows 100 dynamic rules and 2,000 static ones.
	if first.Dynamic > 100 || first.Rules-first.Dynamic > 2000 {
		t.Errorf("%d rules, %d of them dynamic: over Cloudflare Pages' limits", first.Rules, first.Dynamic)
	}

	for _, v := range []string{"26.1.3-pre.1", "26.1.3", "26.2.1", "26.2.2-pre.7"} {
		mustPublish(t, p, v, v)
	}
	if later := check(t); later.Rules != first.Rules {
		t.Errorf("after four more versions: %d rules, was %d; the rules grow with the releases", later.Rules, first.Rules)
	}
}
