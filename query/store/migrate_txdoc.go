package store

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
)

// rewriteTxDocs is migration 0088: the transaction documents written
// before chain families (versions 1 to 5, txdoc_legacy.go), in
// transactions and in tx_addresses, are written again as version 6's,
// their EVM fields as the family's detail document. A document that
// cannot be read is left as it is (its row reads as its key alone, as
// before).
func rewriteTxDocs(ctx context.Context, tx bun.IDB, postgres bool) error {
	const size = 1000
	old := "doc IS NOT NULL AND substr(doc, 1, 3) <> '1:" + txDocVersion + "'"
	var t query.Transaction
	rewrite := func(doc string) (string, bool) {
		if _, err := parseTxDocInto(&t, "", doc); err != nil {
			return "", false
		}
		return string(appendTxDoc(nil, t, postgres)), true
	}
	// transactions, by their key (chain, hash).
	chain, hash := "", ""
	for {
		var rows []struct {
			Chain string `bun:"chain"`
			Hash  string `bun:"hash"`
			Doc   string `bun:"doc"`
		}
		err := tx.NewRaw(`SELECT chain, hash, doc FROM transactions WHERE `+old+` AND (chain > ? OR chain = ? AND hash > ?)
			ORDER BY chain, hash LIMIT ?`, chain, chain, hash, size).Scan(ctx, &rows)
		if err != nil && !isNoRows(err) {
			return fmt.Errorf("rewrite transaction documents: %w", err)
		}
		if len(rows) == 0 {
			break
		}
		for _, r := range rows {
			if doc, ok := rewrite(r.Doc); ok {
				if _, err := tx.ExecContext(ctx, "UPDATE transactions SET doc = ? WHERE chain = ? AND hash = ?", doc, r.Chain, r.Hash); err != nil {
					return fmt.Errorf("rewrite transaction documents: %w", err)
				}
			}
		}
		chain, hash = rows[len(rows)-1].Chain, rows[len(rows)-1].Hash
	}
	// tx_addresses, by theirs (chain, address, block_number, tx_index).
	var (
		address string
		block   uint64
		index   uint
	)
	chain = ""
	for {
		var rows []struct {
			Chain   string `bun:"chain"`
			Address string `bun:"address"`
			Block   uint64 `bun:"block_number"`
			Index   uint   `bun:"tx_index"`
			Doc     string `bun:"doc"`
		}
		err := tx.NewRaw(`SELECT chain, address, block_number, tx_index, doc FROM tx_addresses WHERE `+old+`
			AND (chain, address, block_number, tx_index) > (?, ?, ?, ?)
			ORDER BY chain, address, block_number, tx_index LIMIT ?`, chain, address, block, index, size).Scan(ctx, &rows)
		if err != nil && !isNoRows(err) {
			return fmt.Errorf("rewrite the documents of tx_addresses: %w", err)
		}
		if len(rows) == 0 {
			return nil
		}
		for _, r := range rows {
			if doc, ok := rewrite(r.Doc); ok {
				if _, err := tx.ExecContext(ctx, "UPDATE tx_addresses SET doc = ? WHERE chain = ? AND address = ? AND block_number = ? AND tx_index = ?",
					doc, r.Chain, r.Address, r.Block, r.Index); err != nil {
					return fmt.Errorf("rewrite the documents of tx_addresses: %w", err)
				}
			}
		}
		last := rows[len(rows)-1]
		chain, address, block, index = last.Chain, last.Address, last.Block, last.Index
	}
}
