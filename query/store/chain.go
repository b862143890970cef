package store

import (
	"context"

	"github.com/uptrace/bun"
)

// RecordChainID records id as the chain ID of chain unless one is
// recorded already, and returns the recorded one.
func (db *DB) RecordChainID(ctx context.Context, chain string, id uint64) (uint64, error) {
	var recorded uint64
	err := db.tx(ctx, func(tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO chain_ids (chain, chain_id, recorded) VALUES (?, ?, ?)
			ON CONFLICT (chain) DO NOTHING`, chain, id, db.stamp()); err != nil {
			return err
		}
		return tx.NewRaw("SELECT chain_id FROM chain_ids WHERE chain = ?", chain).Scan(ctx, &recorded)
	})
	return recorded, wrap("record chain id", err)
}
