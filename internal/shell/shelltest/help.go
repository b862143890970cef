// Package shelltest holds the checks that both binaries' tests run on
// what internal/shell builds.
package shelltest

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
)

// Help checks the --help of the app newApp builds and of each of its
// commands, as a user reads it, against testdata/TestHelp.golden (update
// rewrites it). Every flag that takes a value names it (no "value"
// placeholder, no literal backquotes), and nothing files the flags under
// a heading of another program (go-ethereum's "MISC").
func Help(t *testing.T, newApp func(stdout, stderr io.Writer) *cli.App, update bool) {
	t.Helper()
	got, err := shell.HelpPages(newApp)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{" value ", " value,", "`", "MISC"} {
		if strings.Contains(got, bad) {
			t.Errorf("the help holds %q:\n%s", bad, got)
		}
	}
	path := filepath.Join("testdata", "TestHelp.golden")
	if update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run TestHelp -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("the help differs from %s (go test -run TestHelp -update rewrites it):\n%s", path, got)
	}
}
