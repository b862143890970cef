package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/shell"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestHelp: the --help of addrd and of each of its commands, as a user
// reads it (testdata/TestHelp.golden; go test -update rewrites it). Every
// flag that takes a value names it (no "value" placeholder, no literal
// backquotes), and nothing files the flags under a heading of another
// program (go-ethereum's "MISC").
func TestHelp(t *testing.T) {
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
	if *update {
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
