package main

import (
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
)

// TestMain is the package's only one: it stops the shared MinIO (and any
// other shared part) the tests started.
func TestMain(m *testing.M) { testenv.Main(m) }
