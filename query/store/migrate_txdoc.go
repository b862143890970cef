package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
)

// rewriteTxDocs is migration 0088: the transaction documents written
// before chain families (versions 1 to 5, txdoc_legacy.go), in
// transactions and in tx_addresses, are written again as version 6's,
// their family's fields as its detail document (db.legacy). A document
// that cannot be read is left as it is (its row reads as its key alone,
// as before), every one when the store reads no such document.
func rewriteTxDocs(ctx context.Context, tx bun.IDB, db *DB) error {
	const size = 1000
	old := "doc IS NOT NULL AND substr(doc, 1, 3) <> '1:" + txDocVersion + "'"
	var t query.Transaction
	rewrite := func(doc string) (string, bool) {
		if _, err := parseTxDocInto(&t, "", doc, db.legacy); err != nil {
			return "", false
		}
		return string(appendTxDoc(nil, t, db.postgres)), true
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
		var values []any
		for _, r := range rows {
			if doc, ok := rewrite(r.Doc); ok {
				values = append(values, r.Chain, r.Hash, doc)
			}
		}
		if err := updateDocs(ctx, tx, "transactions", []string{"chain", "hash"}, values); err != nil {
			return fmt.Errorf("rewrite transaction documents: %w", err)
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
		var values []any
		for _, r := range rows {
			if doc, ok := rewrite(r.Doc); ok {
				values = append(values, r.Chain, r.Address, r.Block, r.Index, doc)
			}
		}
		if err := updateDocs(ctx, tx, "tx_addresses", []string{"chain", "address", "block_number", "tx_index"}, values); err != nil {
			return fmt.Errorf("rewrite the documents of tx_addresses: %w", err)
		}
		last := rows[len(rows)-1]
		chain, address, block, index = last.Chain, last.Address, last.Block, last.Index
	}
}

// updateDocs sets doc in the rows of table whose key columns equal the
// leading values of each group in values (the key's values, then the
// document), all in one UPDATE ... FROM (VALUES ...), which SQLite and
// PostgreSQL both read, their columns named column1, column2 and so on:
// one statement a page of rows rather than one a row.
func updateDocs(ctx context.Context, tx bun.IDB, table string, key []string, values []any) error {
	width := len(key) + 1
	if len(values) == 0 {
		return nil
	}
	var q strings.Builder
	fmt.Fprintf(&q, "UPDATE %s SET doc = v.column%d FROM (VALUES ", table, width)
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")"
	for i := 0; i < len(values)/width; i++ {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(row)
	}
	q.WriteString(") AS v WHERE ")
	for i, k := range key {
		if i > 0 {
			q.WriteString(" AND ")
		}
		fmt.Fprintf(&q, "%s.%s = v.column%d", table, k, i+1)
	}
	_, err := tx.ExecContext(ctx, q.String(), values...)
	return err
}
