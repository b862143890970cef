package store

// Finality marks (migration 0089): each chain's newest safe and
// finalized stored blocks, and the finalized events written as the
// finalized mark moves up.

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/events"
)

var _ query.FinalityStore = (*DB)(nil)

// Finality returns chain's finality marks; the zero Finality when none
// was set.
func (db *DB) Finality(ctx context.Context, chain string) (query.Finality, error) {
	f, err := db.finality(ctx, db.r, chain)
	return f, wrap("finality", err)
}

func (db *DB) finality(ctx context.Context, tx bun.IDB, chain string) (query.Finality, error) {
	var f query.Finality
	err := tx.QueryRowContext(ctx, "SELECT safe, finalized, source FROM chain_finality WHERE chain = ?", chain).
		Scan(&f.Safe, &f.Finalized, &f.Source)
	if isNoRows(err) {
		return query.Finality{}, nil
	}
	return f, err
}

// SetFinality moves chain's marks up to f, capped at the checkpoint,
// and writes a finalized event for each address with statement rows in
// the blocks that became final.
func (db *DB) SetFinality(ctx context.Context, chain string, f query.Finality) error {
	return wrap("set finality", db.eventTx(ctx, func(tx bun.Tx) error {
		old, err := db.finality(ctx, tx, chain)
		if err != nil {
			return err
		}
		cp, ok, err := db.checkpoint(ctx, tx, chain)
		if err != nil || !ok {
			return err
		}
		f.Finalized = max(min(f.Finalized, cp.Number), old.Finalized)
		f.Safe = max(min(f.Safe, cp.Number), old.Safe, f.Finalized)
		if f == old {
			return nil
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO chain_finality (chain, safe, finalized, source) VALUES (?, ?, ?, ?)
			ON CONFLICT (chain) DO UPDATE SET safe = excluded.safe, finalized = excluded.finalized, source = excluded.source`,
			chain, f.Safe, f.Finalized, f.Source)
		if err != nil || f.Finalized == old.Finalized {
			return err
		}
		return db.finalizedEvents(ctx, tx, chain, old.Finalized, f)
	}))
}

// finalizedEvents writes a finalized event for each address of chain
// with statement rows in the blocks after from up to f.Finalized.
func (db *DB) finalizedEvents(ctx context.Context, tx bun.IDB, chain string, from uint64, f query.Finality) error {
	var rows []struct {
		Address string
		N       int
	}
	err := tx.NewRaw(`SELECT address, COUNT(*) AS n FROM balance_changes
		WHERE chain = ? AND block_number > ? AND block_number <= ? GROUP BY address ORDER BY address`,
		chain, from, f.Finalized).Scan(ctx, &rows)
	if err != nil {
		return err
	}
	now := db.stamp()
	out := make([]query.Event, len(rows))
	for i, r := range rows {
		out[i] = query.Event{Chain: chain, Address: r.Address, Kind: query.EventFinalized, Block: f.Finalized, Created: now,
			Data: events.FinalizedJSON(events.FinalizedData{Chain: chain, Address: r.Address, BlockNumber: f.Finalized,
				FromBlock: from + 1, BalanceChanges: r.N, Source: f.Source})}
	}
	return db.writeEvents(ctx, tx, out)
}

// lowerFinality lowers chain's marks to block number at most (a rewind
// removed the blocks above it).
func (db *DB) lowerFinality(ctx context.Context, tx bun.IDB, chain string, number uint64) error {
	_, err := tx.ExecContext(ctx, `UPDATE chain_finality SET
		safe = CASE WHEN safe > ? THEN ? ELSE safe END,
		finalized = CASE WHEN finalized > ? THEN ? ELSE finalized END
		WHERE chain = ?`, number, number, number, number, chain)
	return err
}
