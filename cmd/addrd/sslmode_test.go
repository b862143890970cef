package main

import (
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
)

// TestPostgresWithoutSSLMode: a DSN without sslmode to a local server
// without TLS (testenv's clusters have none) is refused by lib/pq with
// "SSL is not enabled on the server"; both commands add what to change.
func TestPostgresWithoutSSLMode(t *testing.T) {
	dsn := strings.Replace(testenv.Postgres(t), "?sslmode=disable", "", 1)
	_, _, err := run(t, "migrate", "--db", dsn)
	if err == nil || !strings.Contains(err.Error(), "SSL is not enabled on the server") || !strings.Contains(err.Error(), "add sslmode=disable to the DSN") {
		t.Errorf("addrd migrate --db %s: %v, want the sslmode hint", dsn, err)
	}
}
