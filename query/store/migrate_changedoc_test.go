package store

import (
	"context"
	"testing"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
)

// TestRewriteChangeDocs: migration 0092 rewrites statement rows of
// versions 1 to 3 as version 4's, a withdrawal's index and validator as
// its reference, and leaves a row it cannot read as it is; each dialect.
func TestRewriteChangeDocs(t *testing.T) {
	for _, d := range testenv.DBs() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			db, err := Open(ctx, d.DSN(t))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			old := map[uint64]string{
				// Version 3: a withdrawal, then a fee with its parts.
				1: "1:31:110:17000000000:1:31:31:11:01:1" + "10:withdrawal0:1:52:411:70:" + "3:fee5:0xabd3:-310:0:8:21,0,7,3",
				// Version 2: a token transfer and a withdrawal, no fee parts.
				2: "1:21:210:17000000000:1:31:31:11:01:1" + "5:token5:0xabc1:30:0:" + "10:withdrawal0:1:01:51:7",
				// Version 1: three fields a cause.
				3: "1:11:310:17000000000:1:31:31:11:01:1" + "5:token5:0xabc1:3",
				// Unreadable: left as it is.
				4: "1:3garbage",
			}
			err = db.tx(ctx, func(tx bun.Tx) error {
				for block, doc := range old {
					if _, err := tx.ExecContext(ctx, "INSERT INTO balance_changes (chain, address, block_number, contract, doc) VALUES ('ETH', '0x01', ?, '', ?)", block, doc); err != nil {
						return err
					}
				}
				return rewriteChangeDocs(ctx, tx, db)
			})
			if err != nil {
				t.Fatal(err)
			}
			want := map[uint64][]query.Cause{
				1: {{Kind: query.KindWithdrawal, Amount: query.AmountOf(5), Ref: query.WithdrawalRef(41, 7)},
					{Kind: query.KindFee, TxHash: "0xabd", Amount: query.AmountOf(-31), Fee: &query.FeeParts{Execution: query.AmountOf(21), L1: query.AmountOf(7), Operator: query.AmountOf(3)}}},
				2: {{Kind: query.KindToken, TxHash: "0xabc", Amount: query.AmountOf(3)}, {Kind: query.KindWithdrawal, Amount: query.AmountOf(0), Ref: query.WithdrawalRef(5, 7)}},
				3: {{Kind: query.KindToken, TxHash: "0xabc", Amount: query.AmountOf(3)}},
			}
			for block, doc := range old {
				var got string
				if err := db.w.NewRaw("SELECT doc FROM balance_changes WHERE chain = 'ETH' AND address = '0x01' AND block_number = ?", block).Scan(ctx, &got); err != nil {
					t.Fatal(err)
				}
				causes, readable := want[block]
				if !readable {
					if got != doc {
						t.Errorf("block %d: an unreadable row rewritten as %q", block, got)
					}
					continue
				}
				if got[:3] != "1:"+changeDocVersion {
					t.Errorf("block %d: %q not rewritten to version %s", block, got, changeDocVersion)
				}
				before, err1 := parseChangeDoc("ETH", "0x01", doc)
				after, err2 := parseChangeDoc("ETH", "0x01", got)
				if err1 != nil || err2 != nil {
					t.Fatalf("block %d: %v, %v", block, err1, err2)
				}
				if before.Amount != after.Amount || before.BalanceAfter != after.BalanceAfter || before.Time != after.Time ||
					before.Checked != after.Checked || before.Internals != after.Internals || len(after.Causes) != len(causes) {
					t.Errorf("block %d: read as %+v before, %+v after", block, before, after)
					continue
				}
				for i, c := range after.Causes {
					w := causes[i]
					if c.Kind != w.Kind || c.TxHash != w.TxHash || c.Amount != w.Amount || c.Ref != w.Ref || (c.Fee == nil) != (w.Fee == nil) || c.Fee != nil && *c.Fee != *w.Fee {
						t.Errorf("block %d: cause %d %+v, want %+v", block, i, c, w)
					}
				}
			}
		})
	}
}
