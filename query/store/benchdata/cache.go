package benchdata

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/wharfhq/wharf/query/store"
)

// The SQLite data set takes minutes to make (5.5 at the size on
// a loaded machine) and is made again by each benchmark that needs it:
// three in scripts/bench-addrd.sh. openCached keeps one made data set as
// a file in a cache directory, named by what made it (the schema the
// migrations leave, the seeding statements, the sizes), and copies it
// for the next benchmark instead: a change to either makes a new one.
// The directory keeps one data set at a time (2.2 GB at the issue's
// size).

// cacheDir is where Run keeps the SQLite data set: $WHARF_BENCH_CACHE,
// by default wharf-benchdata in the temporary directory; "off" keeps
// none.
func cacheDir() string {
	switch d := os.Getenv("WHARF_BENCH_CACHE"); d {
	case "":
		return filepath.Join(os.TempDir(), "wharf-benchdata")
	case "off":
		return ""
	default:
		return d
	}
}

// openCached is OpenSized of a SQLite file, dsn, through the cache in
// dir. It says whether the data set came from the cache.
func openCached(ctx context.Context, dir, dsn string, z size) (db *store.DB, id, secret string, cached bool, err error) {
	db, err = store.Open(ctx, dsn) // empty: the schema alone
	if err != nil {
		return nil, "", "", false, err
	}
	key, err := cacheKey(ctx, db, z)
	db.Close()
	if err != nil {
		return nil, "", "", false, err
	}
	file := filepath.Join(dir, key+".db")
	if cred, err := os.ReadFile(file + ".key"); err == nil {
		if id, secret, ok := strings.Cut(string(cred), "\n"); ok {
			for _, f := range []string{dsn + "-wal", dsn + "-shm"} {
				if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
					return nil, "", "", false, err
				}
			}
			if err := copyFile(file, dsn); err != nil {
				return nil, "", "", false, fmt.Errorf("benchdata: from the cache: %w", err)
			}
			db, err := store.Open(ctx, dsn)
			return db, id, secret, true, err
		}
	}
	db, id, secret, err = open(ctx, dsn, z)
	if err != nil {
		return nil, "", "", false, err
	}
	if err := keep(ctx, db, dir, dsn, file, id, secret); err != nil {
		db.Close()
		return nil, "", "", false, fmt.Errorf("benchdata: into the cache: %w", err)
	}
	return db, id, secret, false, nil
}

// cacheKey names the data set of size z made in db, a database with the
// schema and no data.
func cacheKey(ctx context.Context, db *store.DB, z size) (string, error) {
	var schema sql.NullString
	err := db.Bun().QueryRowContext(ctx,
		`SELECT group_concat(sql, ';') FROM (SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name)`).Scan(&schema)
	if err != nil {
		return "", fmt.Errorf("benchdata: schema: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%v\n%s\n", z, schema.String)
	for _, s := range statements(false, z.config(0), "") {
		fmt.Fprintf(h, "%s\n", s)
	}
	return fmt.Sprintf("%d-%d-%s", z.addresses, z.txs, hex.EncodeToString(h.Sum(nil))[:16]), nil
}

// keep copies the data set just made in dsn to file, with the key's id
// and secret beside it (written last: a data set without them is not
// one), and removes any other data set from dir.
func keep(ctx context.Context, db *store.DB, dir, dsn, file, id, secret string) error {
	// Everything in the main file, none left in the WAL.
	if _, err := db.Bun().ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	if err := copyFile(dsn, file+".tmp"); err != nil {
		return err
	}
	if err := os.Rename(file+".tmp", file); err != nil {
		return err
	}
	return os.WriteFile(file+".key", []byte(id+"\n"+secret), 0o600)
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
