package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/store"
)

// TestOpenWaitsForConnections: a replica started while PostgreSQL
// refuses it connections (its role's connection limit reached, as when
// max_connections is: SQLSTATE 53300) waits and retries, saying so, and
// opens the database once a connection is free. It exited.
func TestOpenWaitsForConnections(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	admin, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	role := fmt.Sprintf("limited_%d", time.Now().UnixNano())
	for _, q := range []string{
		"CREATE ROLE " + role + " LOGIN CONNECTION LIMIT 0",
		"GRANT ALL ON SCHEMA public TO " + role,
		"GRANT ALL ON ALL TABLES IN SCHEMA public TO " + role,
		"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO " + role,
	} {
		if _, err := admin.Bun().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	limited := strings.Replace(dsn, "postgres://postgres@", "postgres://"+role+"@", 1)
	log := &testenv.Buffer{}
	opened := make(chan error, 1)
	go func() {
		db, err := openWaiting(ctx, slog.New(slog.NewTextHandler(log, nil)), func() (*store.DB, error) { return store.Open(ctx, limited) })
		if err == nil {
			db.Close()
		}
		opened <- err
	}()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(log.String(), "database unavailable at start: retrying") {
		select {
		case err := <-opened:
			t.Fatalf("open with no connection free returned %v, want it to wait", err)
		case <-deadline:
			t.Fatal("no retry said within 30 s")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := admin.Bun().ExecContext(ctx, "ALTER ROLE "+role+" CONNECTION LIMIT -1"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("open once a connection is free: %v\n%s", err, log)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("not opened within 30 s of a connection being free\n%s", log)
	}
}
