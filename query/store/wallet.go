package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
)

var _ query.WalletStore = (*DB)(nil)

// CreateWallet implements query.WalletStore.
func (db *DB) CreateWallet(ctx context.Context, account int64, w query.Wallet, addrs []query.WalletAddress) (created bool, err error) {
	err = db.tx(ctx, func(tx bun.Tx) error {
		var start *int64
		if w.StartBlock != nil {
			v := int64(*w.StartBlock)
			start = &v
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO wallets (account_id, chain, wallet, gap_limit, created, start_block) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (account_id, chain, wallet) DO NOTHING`, account, w.Chain, w.ID, w.GapLimit, db.stamp(), start)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		for i, d := range w.Descriptors {
			if _, err := tx.ExecContext(ctx, `INSERT INTO wallet_descriptors (account_id, chain, wallet, position, descriptor, internal, derived, used)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, account, w.Chain, w.ID, i, d.Descriptor, d.Internal, d.Derived, d.Used); err != nil {
				return err
			}
		}
		if err := db.addWalletAddresses(ctx, tx, account, w, addrs); err != nil {
			return err
		}
		created = true
		return nil
	})
	return created, wrap("create wallet", err)
}

// addWalletAddresses records addrs as w's and subscribes account to each.
func (db *DB) addWalletAddresses(ctx context.Context, tx bun.Tx, account int64, w query.Wallet, addrs []query.WalletAddress) error {
	for _, a := range addrs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO wallet_addresses (account_id, chain, wallet, position, idx, address)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, account, w.Chain, w.ID, a.Descriptor, a.Index, a.Address); err != nil {
			return err
		}
		if _, err := db.subscribe(ctx, tx, account, w.Chain, a.Address, w.StartBlock); err != nil {
			return err
		}
	}
	return nil
}

// Wallet implements query.WalletStore.
func (db *DB) Wallet(ctx context.Context, account int64, chain, id string) (query.Wallet, []query.WalletAddress, error) {
	w, err := db.wallet(ctx, db.r, account, chain, id)
	if err != nil {
		return w, nil, wrap("wallet", err)
	}
	rows, err := db.r.QueryContext(ctx, `SELECT a.position, a.idx, a.address,
			EXISTS (SELECT 1 FROM tx_addresses AS t WHERE t.chain = a.chain AND t.address = a.address)
		FROM wallet_addresses AS a WHERE a.account_id = ? AND a.chain = ? AND a.wallet = ?
		ORDER BY a.position, a.idx`, account, chain, id)
	if err != nil {
		return w, nil, wrap("wallet", err)
	}
	defer rows.Close()
	var out []query.WalletAddress
	for rows.Next() {
		var a query.WalletAddress
		if err := rows.Scan(&a.Descriptor, &a.Index, &a.Address, &a.Used); err != nil {
			return w, nil, wrap("wallet", err)
		}
		out = append(out, a)
	}
	return w, out, wrap("wallet", rows.Err())
}

// wallet reads a wallet and its descriptors. Errors: query.ErrNotFound.
func (db *DB) wallet(ctx context.Context, q bun.IDB, account int64, chain, id string) (query.Wallet, error) {
	w := query.Wallet{Chain: chain, ID: id}
	var start sql.NullInt64
	err := q.NewRaw("SELECT gap_limit, created, start_block FROM wallets WHERE account_id = ? AND chain = ? AND wallet = ?", account, chain, id).
		Scan(ctx, &w.GapLimit, &w.Created, &start)
	if start.Valid {
		v := uint64(start.Int64)
		w.StartBlock = &v
	}
	if errors.Is(err, sql.ErrNoRows) {
		return w, query.ErrNotFound
	}
	if err != nil {
		return w, err
	}
	rows, err := q.QueryContext(ctx, `SELECT descriptor, internal, derived, used FROM wallet_descriptors
		WHERE account_id = ? AND chain = ? AND wallet = ? ORDER BY position`, account, chain, id)
	if err != nil {
		return w, err
	}
	defer rows.Close()
	for rows.Next() {
		var d query.WalletDescriptor
		if err := rows.Scan(&d.Descriptor, &d.Internal, &d.Derived, &d.Used); err != nil {
			return w, err
		}
		w.Descriptors = append(w.Descriptors, d)
	}
	return w, rows.Err()
}

// DeleteWallet implements query.WalletStore: the wallet's addresses are
// unsubscribed unless another of the account's wallets has them.
func (db *DB) DeleteWallet(ctx context.Context, account int64, chain, id string) error {
	return wrap("delete wallet", db.tx(ctx, func(tx bun.Tx) error {
		var addrs []string
		if err := tx.NewRaw(`SELECT DISTINCT address FROM wallet_addresses AS a WHERE account_id = ? AND chain = ? AND wallet = ?
			AND NOT EXISTS (SELECT 1 FROM wallet_addresses AS o WHERE o.account_id = a.account_id AND o.chain = a.chain
				AND o.address = a.address AND o.wallet <> a.wallet)`, account, chain, id).Scan(ctx, &addrs); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM wallets WHERE account_id = ? AND chain = ? AND wallet = ?", account, chain, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return query.ErrNotFound
		}
		for _, t := range []string{"wallet_descriptors", "wallet_addresses"} {
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+t+" WHERE account_id = ? AND chain = ? AND wallet = ?", account, chain, id); err != nil {
				return err
			}
		}
		for _, a := range addrs {
			if err := db.unsubscribe(ctx, tx, account, chain, a); err != nil && !errors.Is(err, query.ErrNotFound) {
				return err
			}
		}
		return nil
	}))
}

// WalletsOf implements query.WalletStore.
func (db *DB) WalletsOf(ctx context.Context, chain string) ([]query.AccountWallet, error) {
	var keys []struct {
		AccountID int64  `bun:"account_id"`
		Wallet    string `bun:"wallet"`
	}
	if err := db.r.NewRaw("SELECT account_id, wallet FROM wallets WHERE chain = ? ORDER BY account_id, wallet", chain).Scan(ctx, &keys); err != nil {
		return nil, wrap("wallets", err)
	}
	out := make([]query.AccountWallet, 0, len(keys))
	for _, k := range keys {
		w, err := db.wallet(ctx, db.r, k.AccountID, chain, k.Wallet)
		if errors.Is(err, query.ErrNotFound) {
			continue // deleted since
		}
		if err != nil {
			return nil, wrap("wallets", err)
		}
		out = append(out, query.AccountWallet{Account: k.AccountID, Wallet: w})
	}
	return out, nil
}

// ExtendWallet implements query.WalletStore. A wallet deleted meanwhile
// is left deleted.
func (db *DB) ExtendWallet(ctx context.Context, account int64, w query.Wallet, addrs []query.WalletAddress) error {
	return wrap("extend wallet", db.tx(ctx, func(tx bun.Tx) error {
		var exists bool
		if err := tx.NewRaw("SELECT EXISTS (SELECT 1 FROM wallets WHERE account_id = ? AND chain = ? AND wallet = ?)",
			account, w.Chain, w.ID).Scan(ctx, &exists); err != nil || !exists {
			return err
		}
		for i, d := range w.Descriptors {
			if _, err := tx.ExecContext(ctx, `UPDATE wallet_descriptors SET derived = ?, used = ?
				WHERE account_id = ? AND chain = ? AND wallet = ? AND position = ?`, d.Derived, d.Used, account, w.Chain, w.ID, i); err != nil {
				return err
			}
		}
		return db.addWalletAddresses(ctx, tx, account, w, addrs)
	}))
}
