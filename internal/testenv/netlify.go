package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Netlify returns node and the path of tools/netlify/check.mjs, which reads
// a _redirects file with Netlify's own parser (netlify-redirect-parser) and
// matcher (netlify-redirector), both pinned in tools/netlify/package.json
// and installed by `make netlify` (npm ci). It skips or fails as Need when
// node or the installed packages are missing.
func Netlify(tb testing.TB) (node, script string) {
	tb.Helper()
	node, err := exec.LookPath("node")
	Need(tb, "node", err)
	root, err := moduleRoot()
	Need(tb, "the module root", err)
	dir := filepath.Join(root, "tools", "netlify")
	for _, p := range []string{"netlify-redirect-parser", "netlify-redirector"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", p, "package.json")); err != nil {
			Need(tb, "Netlify's redirect packages", fmt.Errorf("%s is not installed (make netlify): %w", p, err))
		}
	}
	return node, filepath.Join(dir, "check.mjs")
}
