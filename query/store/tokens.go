package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
)

// The tokens table (migration 0090) holds a token's symbol, name and
// decimals once per chain, contract and metadata: a row for each answer
// the token gave. The store writes it with the transactions of a block
// (putTokens), from their token transfers' metadata as the quarantine
// left it (capped and made valid there); documents of version 7 name a
// token transfer's row by its id in place of the three fields, and every
// read of such a document fills them in from here (tokenSet), so each
// transfer reads as it was stored.

// tokenPending is the Decimals of a token transfer read from a document
// of version 7 until a tokenSet fills it (its Symbol holds the row's
// id meanwhile): never a token's decimals.
const tokenPending = -1

// isToken reports whether f is a token transfer, whose metadata the
// tokens table keeps.
func isToken(f query.Transfer) bool { return f.Asset != query.AssetNative && f.Contract != "" }

// tokenKey is a token's row: its contract and metadata.
type tokenKey struct {
	Contract, Symbol, Name string
	Decimals               int
}

func keyOf(f query.Transfer) tokenKey { return tokenKey{f.Contract, f.Symbol, f.Name, f.Decimals} }

// putTokens adds the rows of the tokens txs' transfers move (txs as the
// quarantine left them) that are not stored yet, and returns the id of
// each.
func (db *DB) putTokens(ctx context.Context, tx bun.IDB, chain string, txs []query.Transaction) (map[tokenKey]int64, error) {
	first := map[tokenKey]uint64{}
	var keys []tokenKey
	for _, t := range txs {
		for _, f := range t.Transfers {
			if !isToken(f) {
				continue
			}
			k := keyOf(f)
			if b, ok := first[k]; !ok {
				keys = append(keys, k)
				first[k] = t.BlockNumber
			} else {
				first[k] = min(b, t.BlockNumber)
			}
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	now := db.stamp()
	contracts := map[string]bool{}
	args := make([]any, 0, 7*len(keys))
	for _, k := range keys {
		args = append(args, chain, k.Contract, k.Symbol, k.Name, k.Decimals, first[k], now)
		contracts[k.Contract] = true
	}
	if err := db.insert(ctx, tx, tokensInsert, args, nil); err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	names := make([]string, 0, len(contracts))
	for c := range contracts {
		names = append(names, c)
	}
	slices.Sort(names)
	ids := make(map[tokenKey]int64, len(keys))
	for part := range slices.Chunk(names, batch) {
		var rows []struct {
			ID int64 `bun:"id"`
			tokenKey
		}
		err := tx.NewRaw("SELECT id, contract, symbol, name, decimals FROM tokens WHERE chain = ? AND contract IN (?)",
			chain, bun.List(part)).Scan(ctx, &rows)
		if err != nil && !isNoRows(err) {
			return nil, fmt.Errorf("tokens: %w", err)
		}
		for _, r := range rows {
			if _, ok := first[r.tokenKey]; ok {
				ids[r.tokenKey] = r.ID
			}
		}
	}
	for _, k := range keys {
		if _, ok := ids[k]; !ok {
			return nil, fmt.Errorf("tokens: %s %q: stored but not read back", k.Contract, k.Symbol)
		}
	}
	return ids, nil
}

// tokensInsert adds a token's row, or lowers its first block.
var tokensInsert = &insertSpec{into: "tokens (chain, contract, symbol, name, decimals, first_block, updated)", width: 7,
	conflict: "ON CONFLICT (chain, contract, symbol, name, decimals) DO UPDATE SET first_block = excluded.first_block " +
		"WHERE excluded.first_block < tokens.first_block"}

// tokenSet collects the rows the pending transfers of some transactions
// name (tokenPending), reads them in one statement, then fills the
// transfers in.
type tokenSet map[string]tokenKey

// add notes the rows t's pending transfers name.
func (s tokenSet) add(t *query.Transaction) {
	for _, f := range t.Transfers {
		if f.Decimals == tokenPending {
			s[f.Symbol] = tokenKey{}
		}
	}
}

// read fetches the rows in s. A row that is not there (none is written
// without one) reads as no metadata.
func (s tokenSet) read(ctx context.Context, tx bun.IDB) error {
	if len(s) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(s))
	for id := range s {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			ids = append(ids, n)
		}
	}
	slices.Sort(ids)
	for part := range slices.Chunk(ids, batch) {
		var rows []struct {
			ID int64 `bun:"id"`
			tokenKey
		}
		err := tx.NewRaw("SELECT id, contract, symbol, name, decimals FROM tokens WHERE id IN (?)", bun.List(part)).Scan(ctx, &rows)
		if err != nil && !isNoRows(err) {
			return fmt.Errorf("tokens: %w", err)
		}
		for _, r := range rows {
			s[strconv.FormatInt(r.ID, 10)] = r.tokenKey
		}
	}
	return nil
}

// fill sets the metadata of t's pending transfers; plain is false when
// one of the strings it set is not query.PlainText.
func (s tokenSet) fill(t *query.Transaction) (plain bool) {
	plain = true
	for i := range t.Transfers {
		f := &t.Transfers[i]
		if f.Decimals != tokenPending {
			continue
		}
		k := s[f.Symbol]
		f.Symbol, f.Name, f.Decimals = k.Symbol, k.Name, k.Decimals
		plain = plain && query.PlainText(k.Symbol) && query.PlainText(k.Name)
	}
	return plain
}

// fillTokens fills in the metadata of the pending transfers of txs from
// the tokens table, in one read.
func (db *DB) fillTokens(ctx context.Context, tx bun.IDB, txs []query.Transaction) error {
	s := tokenSet{}
	for i := range txs {
		s.add(&txs[i])
	}
	if len(s) == 0 {
		return nil
	}
	if err := s.read(ctx, tx); err != nil {
		return err
	}
	for i := range txs {
		s.fill(&txs[i])
	}
	return nil
}
