package main

import (
	"flag"
	"testing"

	"github.com/wharfhq/wharf/internal/shell/shelltest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestHelp: the --help of addrd and of each of its commands, as a user
// reads it (testdata/TestHelp.golden; go test -update rewrites it).
func TestHelp(t *testing.T) { shelltest.Help(t, newApp, *update) }
