package store

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
)

// rewriteChangeDocs is migration 0092: the statement rows stored before
// causes kept their references (versions 1 to 3, statement.go) are
// written again as version 4's, a withdrawal's index and validator index
// as its reference (query.WithdrawalRef). A row that cannot be read is
// left as it is, as its read fails as before.
func rewriteChangeDocs(ctx context.Context, tx bun.IDB, _ *DB) error {
	const size = 1000
	old := "substr(doc, 1, 3) <> '1:" + changeDocVersion + "'"
	var (
		chain, address, contract string
		block                    uint64
		c                        query.BalanceChange
	)
	for {
		var rows []struct {
			Chain    string `bun:"chain"`
			Address  string `bun:"address"`
			Block    uint64 `bun:"block_number"`
			Contract string `bun:"contract"`
			Doc      string `bun:"doc"`
		}
		err := tx.NewRaw(`SELECT chain, address, block_number, contract, doc FROM balance_changes WHERE `+old+`
			AND (chain, address, block_number, contract) > (?, ?, ?, ?)
			ORDER BY chain, address, block_number, contract LIMIT ?`, chain, address, block, contract, size).Scan(ctx, &rows)
		if err != nil && !isNoRows(err) {
			return fmt.Errorf("rewrite the statement rows: %w", err)
		}
		if len(rows) == 0 {
			return nil
		}
		var values []any
		for _, r := range rows {
			if err := parseChangeDocInto(&c, r.Chain, r.Address, r.Doc); err != nil {
				continue
			}
			values = append(values, r.Chain, r.Address, r.Block, r.Contract, string(appendChangeDoc(nil, c)))
		}
		if err := updateDocs(ctx, tx, "balance_changes", []string{"chain", "address", "block_number", "contract"}, values); err != nil {
			return fmt.Errorf("rewrite the statement rows: %w", err)
		}
		last := rows[len(rows)-1]
		chain, address, block, contract = last.Chain, last.Address, last.Block, last.Contract
	}
}
