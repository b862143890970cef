package store

import (
	"context"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
)

type balanceRow struct {
	bun.BaseModel `bun:"table:balances,alias:balances"`

	Chain    string    `bun:"chain"`
	Address  string    `bun:"address"`
	Contract string    `bun:"contract"`
	Asset    string    `bun:"asset"`
	Symbol   string    `bun:"symbol"`
	Decimals int       `bun:"decimals"`
	Amount   string    `bun:"amount"`
	Block    uint64    `bun:"block_number"`
	Updated  time.Time `bun:"updated"`
}

// Balances returns the stored balances of an address, native first, then
// by contract.
func (db *DB) Balances(ctx context.Context, chain, address string) ([]query.Balance, error) {
	var rows []balanceRow
	err := db.r.NewSelect().Model(&rows).Where("chain = ?", chain).Where("address = ?", address).
		OrderExpr("CASE WHEN asset = ? THEN 0 ELSE 1 END, contract", query.AssetNative).Scan(ctx)
	if err != nil {
		return nil, wrap("balances", err)
	}
	return balances(rows), nil
}

// accountBalances reads an address's balances for a requester, checking
// the subscription in the same statement (an uncorrelated EXISTS, which
// both databases evaluate once).
const accountBalances = `SELECT chain, address, contract, asset, symbol, decimals, amount, block_number, updated
	FROM balances WHERE chain = $1 AND address = $2
	AND EXISTS (SELECT 1 FROM subscriptions WHERE account_id = $3 AND chain = $1 AND address = $2)
	ORDER BY CASE WHEN asset = 'native' THEN 0 ELSE 1 END, contract`

// AccountBalances is Balances for a requester, who must be subscribed to
// address.
func (db *DB) AccountBalances(ctx context.Context, account int64, chain, address string) ([]query.Balance, error) {
	var rows []balanceRow
	r, err := db.queryHot(ctx, accountBalances, chain, address, account)
	if err == nil {
		err = db.r.ScanRows(ctx, r, &rows) // closes r
	}
	if err == nil && len(rows) == 0 {
		// Nothing: no balances yet, or no subscription.
		err = db.readable(ctx, account, chain, address)
	}
	if err != nil {
		return nil, wrap("balances", err)
	}
	return balances(rows), nil
}

func balances(rows []balanceRow) []query.Balance {
	out := make([]query.Balance, len(rows))
	for i, r := range rows {
		out[i] = query.Balance{Chain: r.Chain, Address: r.Address, Asset: r.Asset, Contract: r.Contract,
			Symbol: r.Symbol, Decimals: r.Decimals, Amount: r.Amount, Block: r.Block, Updated: utc(r.Updated)}
	}
	return out
}

// PutBalances upserts balances; a balance read at an older block than the
// stored one is ignored.
func (db *DB) PutBalances(ctx context.Context, balances []query.Balance) error {
	if err := validate(nil, balances); err != nil {
		return wrap("put balances", err)
	}
	return wrap("put balances", db.tx(ctx, func(tx bun.Tx) error { return db.putBalances(ctx, tx, balances) }))
}

func (db *DB) putBalances(ctx context.Context, tx bun.IDB, balances []query.Balance) error {
	if len(balances) == 0 {
		return nil
	}
	rows := make([]balanceRow, 0, len(balances))
	for _, b := range balances {
		updated := b.Updated
		if updated.IsZero() {
			updated = db.stamp()
		}
		rows = append(rows, balanceRow{Chain: b.Chain, Address: b.Address, Contract: b.Contract, Asset: b.Asset,
			Symbol: b.Symbol, Decimals: b.Decimals, Amount: b.Amount, Block: b.Block, Updated: updated.UTC()})
	}
	// Two reads of one key in a batch: keep the later block, since one
	// statement may not update a row twice.
	slices.SortStableFunc(rows, func(a, b balanceRow) int {
		if a.Chain != b.Chain {
			return cmpString(a.Chain, b.Chain)
		}
		if a.Address != b.Address {
			return cmpString(a.Address, b.Address)
		}
		return cmpString(a.Contract, b.Contract)
	})
	rows = dedupLast(rows)
	for part := range slices.Chunk(rows, batch) {
		_, err := tx.NewInsert().Model(&part).
			On("CONFLICT (chain, address, contract) DO UPDATE").
			Set("asset = EXCLUDED.asset, symbol = EXCLUDED.symbol, decimals = EXCLUDED.decimals").
			Set("amount = EXCLUDED.amount, block_number = EXCLUDED.block_number, updated = EXCLUDED.updated").
			Where("balances.block_number <= EXCLUDED.block_number").
			Exec(ctx)
		if err != nil {
			return err
		}
	}
	return nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// dedupLast keeps, of sorted rows with one key, the one at the highest
// block (the last of equals).
func dedupLast(rows []balanceRow) []balanceRow {
	out := rows[:0]
	for _, r := range rows {
		if n := len(out); n > 0 && out[n-1].Chain == r.Chain && out[n-1].Address == r.Address && out[n-1].Contract == r.Contract {
			if r.Block >= out[n-1].Block {
				out[n-1] = r
			}
			continue
		}
		out = append(out, r)
	}
	return out
}
