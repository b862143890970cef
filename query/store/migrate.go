package store

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/internal/pghint"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migration is one embedded schema change, named NNNN_name.sql.
type Migration struct {
	Version int
	Name    string
	sql     string
}

// dialectTypes fill the type placeholders of the migration files.
type dialectTypes struct {
	Serial, Time, Bytes, Amount string
	IncludeHash, WithoutRowID   string
}

var (
	postgresTypes = dialectTypes{Serial: "BIGSERIAL PRIMARY KEY", Time: "TIMESTAMPTZ", Bytes: "BYTEA", Amount: "NUMERIC(78, 0)",
		IncludeHash: " INCLUDE (hash)"}
	sqliteTypes = dialectTypes{Serial: "INTEGER PRIMARY KEY AUTOINCREMENT", Time: "TIMESTAMP", Bytes: "BLOB", Amount: "TEXT",
		WithoutRowID: " WITHOUT ROWID"}
)

// migrations returns the embedded migrations in order, rendered for the dialect.
func migrations(postgres bool) ([]Migration, error) {
	types := sqliteTypes
	if postgres {
		types = postgresTypes
	}
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []Migration
	for _, name := range names {
		base := strings.TrimSuffix(path.Base(name), ".sql")
		num, label, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("store: migration %s: want NNNN_name.sql", name)
		}
		if len(out) > 0 && out[len(out)-1].Version >= v {
			return nil, fmt.Errorf("store: migration %s: version %d repeated or out of order", name, v)
		}
		text, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		t, err := template.New(name).Option("missingkey=error").Parse(string(text))
		if err != nil {
			return nil, fmt.Errorf("store: migration %s: %w", name, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, types); err != nil {
			return nil, fmt.Errorf("store: migration %s: %w", name, err)
		}
		out = append(out, Migration{Version: v, Name: label, sql: b.String()})
	}
	return out, nil
}

// statements splits a migration into statements: comment lines dropped,
// split at semicolons (the migrations hold no semicolon in a literal).
func statements(sql string) []string {
	var b strings.Builder
	for line := range strings.Lines(sql) {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		b.WriteString(line)
	}
	var out []string
	for s := range strings.SplitSeq(b.String(), ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Migrate applies the pending migrations in order, each recorded in
// addrd_migrations, and returns those it applied. Concurrent callers
// (several replicas starting at once) are serialised by a lock.
func (db *DB) Migrate(ctx context.Context) ([]Migration, error) {
	all, err := migrations(db.postgres)
	if err != nil {
		return nil, err
	}
	var applied []Migration
	err = db.tx(ctx, func(tx bun.Tx) error {
		applied, err = db.migrate(ctx, tx, all)
		return err
	})
	if err != nil {
		return nil, wrap("migrate", pghint.Explain(err))
	}
	return applied, nil
}

func (db *DB) migrate(ctx context.Context, tx bun.IDB, all []Migration) ([]Migration, error) {
	if db.postgres {
		// A transaction-scoped lock: released by commit or rollback.
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(7368209)"); err != nil {
			return nil, err
		}
	}
	create := "CREATE TABLE IF NOT EXISTS addrd_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied TIMESTAMP NOT NULL)"
	if db.postgres {
		create = strings.Replace(create, "TIMESTAMP", "TIMESTAMPTZ", 1)
	}
	if _, err := tx.ExecContext(ctx, create); err != nil {
		return nil, err
	}
	var done []int
	if err := tx.NewRaw("SELECT version FROM addrd_migrations").Scan(ctx, &done); err != nil {
		return nil, err
	}
	have := make(map[int]bool, len(done))
	for _, v := range done {
		have[v] = true
	}
	var applied []Migration
	for _, m := range all {
		if have[m.Version] {
			continue
		}
		for _, stmt := range statements(m.sql) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return nil, fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err)
			}
		}
		if fill := migrationFills[m.Version]; fill != nil {
			if err := fill(ctx, tx, db); err != nil {
				return nil, fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO addrd_migrations (version, name, applied) VALUES (?, ?, ?)",
			m.Version, m.Name, db.stamp()); err != nil {
			return nil, err
		}
		applied = append(applied, m)
	}
	return applied, nil
}
