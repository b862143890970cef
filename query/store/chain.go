package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
)

var _ query.ChainGuard = (*DB)(nil)

// RecordChainIdentity implements query.ChainGuard. An EVM chain's
// EIP-155 number is written to chain_id too, for a replica of the release
// before (migration 0087).
func (db *DB) RecordChainIdentity(ctx context.Context, chain string, id query.ChainIdentity) (query.ChainIdentity, error) {
	var recorded query.ChainIdentity
	err := db.tx(ctx, func(tx bun.Tx) error {
		namespace, reference, err := query.ParseChainID(id.ID)
		if err != nil {
			return fmt.Errorf("of %s: %w", chain, err)
		}
		var legacy uint64
		if namespace == "eip155" {
			legacy, _ = strconv.ParseUint(reference, 10, 63)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO chain_ids (chain, chain_id, caip2, recorded, genesis) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (chain) DO NOTHING`, chain, legacy, id.ID, db.stamp(), id.Genesis); err != nil {
			return err
		}
		// A chain recorded before its genesis was: the genesis of the
		// chain ID recorded, when that is the node's.
		if id.Genesis != "" {
			if _, err := tx.ExecContext(ctx, `UPDATE chain_ids SET genesis = ? WHERE chain = ? AND `+chainIDColumn+` = ? AND genesis = ''`,
				id.Genesis, chain, id.ID); err != nil {
				return err
			}
		}
		return tx.NewRaw("SELECT "+chainIDColumn+", genesis FROM chain_ids WHERE chain = ?", chain).Scan(ctx, &recorded.ID, &recorded.Genesis)
	})
	return recorded, wrap("record chain identity", err)
}

// chainIDColumn reads a chain_ids row's CAIP-2 chain ID: caip2, or for a
// row a replica of the release before recorded (migration 0087), the EVM
// chain of its chain_id.
const chainIDColumn = "(CASE WHEN caip2 = '' THEN 'eip155:' || chain_id ELSE caip2 END)"

// StopChain implements query.ChainGuard.
func (db *DB) StopChain(ctx context.Context, chain, reason string) error {
	if reason == "" {
		return fmt.Errorf("store: stop chain %s: no reason", chain)
	}
	err := db.tx(ctx, func(tx bun.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO chain_stops (chain, reason, stopped_ms) VALUES (?, ?, `+db.nowMillis()+`)
			ON CONFLICT (chain) DO UPDATE SET reason = excluded.reason, stopped_ms = excluded.stopped_ms, accept = 0`, chain, reason)
		return err
	})
	return wrap("stop chain "+chain, err)
}

// ChainStop implements query.ChainGuard.
func (db *DB) ChainStop(ctx context.Context, chain string) (query.ChainStop, error) {
	s := query.ChainStop{RewindTo: -1}
	var stopped, accept int64
	err := db.w.NewRaw(`SELECT reason, stopped_ms, accept, rewind_to FROM chain_stops WHERE chain = ?`, chain).
		Scan(ctx, &s.Reason, &stopped, &accept, &s.RewindTo)
	if isNoRows(err) {
		return query.ChainStop{RewindTo: -1}, nil
	}
	if err != nil {
		return query.ChainStop{RewindTo: -1}, wrap("chain stop "+chain, err)
	}
	if stopped > 0 {
		s.Since = time.UnixMilli(stopped).UTC()
	}
	s.Accept = accept != 0
	return s, nil
}

// ResumeChain implements query.ChainGuard.
func (db *DB) ResumeChain(ctx context.Context, chain string) error {
	var n int64
	err := db.tx(ctx, func(tx bun.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE chain_stops SET reason = '', accept = 1 WHERE chain = ? AND reason <> ''`, chain)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return wrap("resume chain "+chain, err)
	}
	if n == 0 {
		return fmt.Errorf("store: resume chain %s: its fetching is not stopped: %w", chain, query.ErrNotFound)
	}
	return nil
}

// RewindChain implements query.ChainGuard.
func (db *DB) RewindChain(ctx context.Context, chain string, to uint64) error {
	err := db.tx(ctx, func(tx bun.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO chain_stops (chain, reason, rewind_to) VALUES (?, '', ?)
			ON CONFLICT (chain) DO UPDATE SET reason = '', accept = 0, rewind_to = excluded.rewind_to`, chain, int64(to))
		return err
	})
	return wrap("rewind chain "+chain, err)
}

// DoneChainOrders implements query.ChainGuard. An order given again
// meanwhile (another rewind) stays.
func (db *DB) DoneChainOrders(ctx context.Context, chain string, accepted bool, rewound int64) error {
	err := db.tx(ctx, func(tx bun.Tx) error {
		if accepted {
			if _, err := tx.ExecContext(ctx, `UPDATE chain_stops SET accept = 0 WHERE chain = ? AND reason = ''`, chain); err != nil {
				return err
			}
		}
		if rewound >= 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE chain_stops SET rewind_to = -1 WHERE chain = ? AND rewind_to = ?`, chain, rewound); err != nil {
				return err
			}
		}
		return nil
	})
	return wrap("chain orders "+chain, err)
}

// RecordedChains lists the chain names whose identity is recorded (every
// chain fetched at least once), in order.
func (db *DB) RecordedChains(ctx context.Context) ([]string, error) {
	var names []string
	err := db.w.NewRaw("SELECT chain FROM chain_ids ORDER BY chain").Scan(ctx, &names)
	return names, wrap("recorded chains", err)
}

// ChainIdentity returns the identity recorded for chain. Errors:
// query.ErrNotFound.
func (db *DB) ChainIdentity(ctx context.Context, chain string) (query.ChainIdentity, error) {
	var id query.ChainIdentity
	err := db.w.NewRaw("SELECT "+chainIDColumn+", genesis FROM chain_ids WHERE chain = ?", chain).Scan(ctx, &id.ID, &id.Genesis)
	return id, wrap("chain identity "+chain, err)
}
