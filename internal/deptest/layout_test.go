package deptest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeLayout holds the README's layout table to the module: every
// package is named in it (as `path` or as the start of `path/...`), so
// that a package nobody documented fails here rather than going unseen.
func TestReadmeLayout(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	table := layoutTable(string(b))
	if table == "" {
		t.Fatal("README.md has no table headed | path | what |")
	}
	for _, p := range packages(t) {
		rel := strings.TrimPrefix(p.ImportPath, mod)
		if rel == strings.TrimSuffix(mod, "/") {
			continue
		}
		if !strings.Contains(table, "`"+rel+"`") && !strings.Contains(table, "`"+rel+"/") {
			t.Errorf("README.md's layout table does not name %s", rel)
		}
	}
}

// layoutTable is the README's table headed "| path | what |", its rows
// up to the first line that is not one.
func layoutTable(readme string) string {
	_, rest, ok := strings.Cut(readme, "| path | what |")
	if !ok {
		return ""
	}
	var rows []string
	for _, line := range strings.Split(rest, "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		rows = append(rows, line)
	}
	return strings.Join(rows, "\n")
}
