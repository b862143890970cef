package store

import (
	"context"

	"github.com/uptrace/bun"
)

// Secret returns the named server secret, creating 32 random bytes on
// first use. Replicas sharing a database share it.
func (db *DB) Secret(ctx context.Context, name string) ([]byte, error) {
	fresh := make([]byte, 32)
	if _, err := db.rand.Read(fresh); err != nil {
		return nil, wrap("secret", err)
	}
	var v []byte
	err := db.tx(ctx, func(tx bun.Tx) error {
		var err error
		v, err = db.secret(ctx, tx, name, fresh)
		return err
	})
	return v, wrap("secret "+name, err)
}

func (db *DB) secret(ctx context.Context, tx bun.IDB, name string, fresh []byte) ([]byte, error) {
	if _, err := tx.ExecContext(ctx, "INSERT INTO secrets (name, value, created) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING",
		name, fresh, db.stamp()); err != nil {
		return nil, err
	}
	var v []byte
	err := tx.NewRaw("SELECT value FROM secrets WHERE name = ?", name).Scan(ctx, &v)
	return v, err
}
