package main

import (
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
)

// TestPostgresWithoutSSLMode: wharf's --db too says to add sslmode=disable
// when a local server without TLS refuses lib/pq's default.
func TestPostgresWithoutSSLMode(t *testing.T) {
	dsn := strings.Replace(testenv.Postgres(t), "?sslmode=disable", "", 1)
	_, _, err := pubRun(t, "org", "list", "--db", dsn)
	if err == nil || !strings.Contains(err.Error(), "SSL is not enabled on the server") || !strings.Contains(err.Error(), "add sslmode=disable to the DSN") {
		t.Errorf("wharf org list --db %s: %v, want the sslmode hint", dsn, err)
	}
}
