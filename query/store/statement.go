package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
)

// A statement row is stored as a document in balance_changes (migration
// 0003), keyed (chain, address, block_number, contract), so that a page is
// one range read of that key, newest first, whatever its depth. The
// document is a run of length-prefixed fields, as a transaction's
// (txdoc.go), read without a decoder's reflection:
//
//	version "4", block, time (Unix seconds; empty for none), contract
//	(the holding key: contract/id for an ERC-1155 id), amount, balance
//	after, reconciled ("1" or "0", checked; "-" not checked: rows stored
//	before it was kept say "1"), difference, internals ("1" or "0",
//	BalanceChange.Internals), then five fields per cause: kind, hash,
//	amount, its reference (query.Cause.Ref, as its family wrote it), and
//	for a fee with parts beyond execution the parts,
//	"execution,blob,l1,operator" (empty otherwise)
//
// Version "3" rows have six fields per cause: a withdrawal's index and
// validator index (empty otherwise) in place of the reference, read as
// its reference (query.WithdrawalRef); version "2" rows five, without
// the fee's parts; version "1" rows three, without either. Migration
// 0092 rewrites them as version 4's.
const changeDocVersion = "4"

func appendChangeDoc(b []byte, c query.BalanceChange) []byte {
	t := ""
	if !c.Time.IsZero() {
		t = strconv.FormatInt(c.Time.Unix(), 10)
	}
	for _, s := range []string{changeDocVersion, strconv.FormatUint(c.Block, 10), t, c.Contract, c.Amount.String(), c.BalanceAfter.String(),
		checkFlag(c), c.Difference.String(), flag(c.Internals)} {
		b = appendField(b, s)
	}
	for _, cs := range c.Causes {
		b = appendField(appendField(appendField(appendField(b, cs.Kind), cs.TxHash), cs.Amount.String()), cs.Ref)
		if p := cs.Fee; p != nil {
			b = appendField(b, p.Execution.String()+","+p.Blob.String()+","+p.L1.String()+","+p.Operator.String())
		} else {
			b = append(b, "0:"...)
		}
	}
	return b
}

// checkFlag is a row's reconciled field: "-" when it was not checked.
func checkFlag(c query.BalanceChange) string {
	if !c.Checked {
		return "-"
	}
	return flag(c.Reconciled)
}

func flag(v bool) string {
	if v {
		return "1"
	}
	return "0"
}

// parseChangeDoc decodes a document written by appendChangeDoc.
func parseChangeDoc(chain, address string, doc string) (query.BalanceChange, error) {
	var c query.BalanceChange
	if err := parseChangeDocInto(&c, chain, address, doc); err != nil {
		return query.BalanceChange{}, err
	}
	return c, nil
}

// parseChangeDocInto is parseChangeDoc into c, whose Causes' array it
// reuses, as parseTxDocInto.
func parseChangeDocInto(c *query.BalanceChange, chain, address string, doc string) error {
	r := txDocReader{s: doc}
	v := r.string()
	if r.err == nil && v != changeDocVersion && v != "3" && v != "2" && v != "1" {
		return fmt.Errorf("statement row version %q: %w", v, errTxDoc)
	}
	*c = query.BalanceChange{Chain: chain, Address: address, Block: r.uint(), Causes: c.Causes[:0]}
	if t := r.string(); t != "" {
		c.Time = time.Unix(r.signed(t), 0).UTC()
	}
	c.Contract, c.Amount, c.BalanceAfter = r.string(), r.amount(), r.amount()
	rec := r.string()
	c.Checked, c.Reconciled = rec != "-", rec == "1"
	c.Difference, c.Internals = r.amountOr(true), r.string() == "1"
	for r.err == nil && r.s != "" {
		cs := query.Cause{Kind: r.string(), TxHash: r.string(), Amount: r.amount()}
		switch v {
		case changeDocVersion:
			cs.Ref = r.string()
		case "3", "2":
			if index := r.string(); index != "" {
				cs.Ref = query.WithdrawalRef(r.unsigned(index), r.uint())
			} else if r.string() != "" {
				r.err = errTxDoc
			}
		}
		if v == changeDocVersion || v == "3" {
			if f := r.string(); f != "" {
				cs.Fee = parseFeeParts(&r, f)
			}
		}
		c.Causes = append(c.Causes, cs)
	}
	if r.err != nil {
		return fmt.Errorf("statement row of %s at %d: %w", address, c.Block, r.err)
	}
	return nil
}

// parseFeeParts reads a fee cause's parts field, four amounts joined by
// commas; a malformed one sets r's error.
func parseFeeParts(r *txDocReader, f string) *query.FeeParts {
	parts := strings.Split(f, ",")
	if len(parts) != 4 {
		r.err = errTxDoc
		return nil
	}
	var amounts [4]query.Amount
	for i, p := range parts {
		a, err := query.ParseAmount(p)
		if err != nil {
			r.err = fmt.Errorf("%w: %w", errTxDoc, err)
			return nil
		}
		amounts[i] = a
	}
	return &query.FeeParts{Execution: amounts[0], Blob: amounts[1], L1: amounts[2], Operator: amounts[3]}
}

type headRow struct {
	bun.BaseModel `bun:"table:statement_heads"`

	Chain    string       `bun:"chain"`
	Address  string       `bun:"address"`
	Contract string       `bun:"contract"`
	Block    uint64       `bun:"block_number"`
	Balance  query.Amount `bun:"balance"`
}

// The statement page: like the transactions page (txpage.go), a row of
// the requester's subscription state, then one range read, in one column
// (statement documents begin with a digit too).
const (
	changePageFirst = `SELECT ` + subscriptionState + ` FROM ` + subscriptionTables + `
		WHERE s.account_id = $4 AND s.chain = $1 AND s.address = $2
		UNION ALL
		SELECT p.doc FROM (SELECT doc FROM balance_changes
			WHERE chain = $1 AND address = $2
			AND EXISTS (SELECT 1 FROM subscriptions WHERE account_id = $4 AND chain = $1 AND address = $2)
			ORDER BY block_number DESC, contract DESC LIMIT $3) AS p`
	changePageAfter = `SELECT ` + subscriptionState + ` FROM ` + subscriptionTables + `
		WHERE s.account_id = $6 AND s.chain = $1 AND s.address = $2
		UNION ALL
		SELECT p.doc FROM (SELECT doc FROM balance_changes
			WHERE chain = $1 AND address = $2 AND (block_number, contract) < ($3, $5)
			AND EXISTS (SELECT 1 FROM subscriptions WHERE account_id = $6 AND chain = $1 AND address = $2)
			ORDER BY block_number DESC, contract DESC LIMIT $4) AS p`
)

// AccountBalanceChanges returns the statement of address after the
// cursor, newest first, at most limit rows, to an account subscribed to
// it. Errors: query.ErrNotSubscribed.
func (db *DB) AccountBalanceChanges(ctx context.Context, account int64, chain, address string, after *query.ChangeCursor, limit int) ([]query.BalanceChange, error) {
	_, out, err := db.SubscriptionBalanceChanges(ctx, account, chain, address, after, limit)
	return out, err
}

// SubscriptionBalanceChanges returns the account's subscription to
// address, with its state and covered range (not its creation time), and
// the page of
// AccountBalanceChanges, in one read. Errors: query.ErrNotSubscribed.
func (db *DB) SubscriptionBalanceChanges(ctx context.Context, account int64, chain, address string, after *query.ChangeCursor, limit int) (query.Subscription, []query.BalanceChange, error) {
	out := make([]query.BalanceChange, 0, min(max(limit, 0), 64))
	sub, err := db.SubscriptionBalanceChangesFunc(ctx, account, chain, address, after, limit, func(c *query.BalanceChange) error {
		r := *c
		r.Causes = nil
		if len(c.Causes) > 0 {
			r.Causes = slices.Clone(c.Causes)
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return query.Subscription{}, nil, err
	}
	return sub, out, nil
}

// SubscriptionBalanceChangesFunc is SubscriptionBalanceChanges handing
// the page to fn one row at a time, as SubscriptionTransactionsFunc: the
// row fn gets, and its Causes, are reused for the next one.
func (db *DB) SubscriptionBalanceChangesFunc(ctx context.Context, account int64, chain, address string, after *query.ChangeCursor, limit int, fn func(*query.BalanceChange) error) (query.Subscription, error) {
	if limit <= 0 {
		sub, err := db.Subscription(ctx, account, chain, address)
		return sub, wrap("balance changes", err)
	}
	q, args := changePageFirst, []any{chain, address, limit, account}
	if after != nil {
		q, args = changePageAfter, []any{chain, address, after.Block, limit, after.Contract, account}
	}
	docs := make([]string, 0, min(limit, 64))
	sub, err := db.readPage(ctx, chain, address, q, args, func(doc string, _ bool) error {
		docs = append(docs, doc)
		return nil
	})
	if err != nil {
		return query.Subscription{}, wrap("balance changes", err)
	}
	var c query.BalanceChange
	for _, doc := range docs {
		if err := parseChangeDocInto(&c, chain, address, doc); err != nil {
			return query.Subscription{}, wrap("balance changes", err)
		}
		if err := fn(&c); err != nil {
			return query.Subscription{}, err
		}
	}
	return sub, nil
}

// StatementHeads returns where the statements of addresses stand.
func (db *DB) StatementHeads(ctx context.Context, chain string, addresses []string) ([]query.StatementHead, error) {
	var out []query.StatementHead
	for part := range slices.Chunk(addresses, batch) {
		var rows []headRow
		err := db.w.NewSelect().Model(&rows).Where("chain = ?", chain).Where("address IN (?)", bun.List(part)).Scan(ctx)
		if err != nil {
			return nil, wrap("statement heads", err)
		}
		for _, r := range rows {
			out = append(out, query.StatementHead{Address: r.Address, Contract: r.Contract, Block: r.Block, Balance: r.Balance})
		}
	}
	return out, nil
}

// Statement bounds: the first row above a block, the last row below one,
// and the head, of one holding.
const (
	boundAbove = `SELECT doc FROM balance_changes WHERE chain = ? AND address = ? AND contract = ? AND block_number > ?
		ORDER BY block_number LIMIT 1`
	boundBelow = `SELECT doc FROM balance_changes WHERE chain = ? AND address = ? AND contract = ? AND block_number < ?
		ORDER BY block_number DESC LIMIT 1`
	boundHead = `SELECT block_number, balance FROM statement_heads WHERE chain = ? AND address = ? AND contract = ?`
)

// StatementBounds returns what the statement tells of holdings' balances
// around blocks lo to hi (query.StatementBound).
func (db *DB) StatementBounds(ctx context.Context, chain string, holdings []query.Holding, lo, hi uint64) ([]query.StatementBound, error) {
	out := make([]query.StatementBound, len(holdings))
	for i, h := range holdings {
		b := query.StatementBound{Holding: h}
		above, err := db.boundRow(ctx, boundAbove, chain, h, hi)
		if err != nil {
			return nil, wrap("statement bounds", err)
		}
		if above != nil {
			opening := above.BalanceAfter.Sub(above.Amount)
			b.Above = &opening
		} else {
			var (
				block   uint64
				balance query.Amount
			)
			err := db.w.QueryRowContext(ctx, boundHead, chain, h.Address, h.Contract).Scan(&block, &balance)
			switch {
			case err == nil && block >= hi:
				b.Above = &balance
			case err != nil && !isNoRows(err):
				return nil, wrap("statement bounds", err)
			}
		}
		if lo > 0 {
			below, err := db.boundRow(ctx, boundBelow, chain, h, lo)
			if err != nil {
				return nil, wrap("statement bounds", err)
			}
			if below != nil {
				b.Below = &below.BalanceAfter
			}
		}
		out[i] = b
	}
	return out, nil
}

// boundRow reads the one statement row q selects for h around block, or
// nil.
func (db *DB) boundRow(ctx context.Context, q, chain string, h query.Holding, block uint64) (*query.BalanceChange, error) {
	var doc []byte
	err := db.w.QueryRowContext(ctx, q, chain, h.Address, h.Contract, block).Scan(&doc)
	if isNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c, err := parseChangeDoc(chain, h.Address, string(doc))
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// PutStatement stores statement rows, heads and balances in one transaction.
func (db *DB) PutStatement(ctx context.Context, chain string, changes []query.BalanceChange, heads []query.StatementHead, balances []query.Balance) error {
	if err := validate(nil, balances); err != nil {
		return wrap("put statement", err)
	}
	if err := db.prepareWrites(ctx); err != nil {
		return wrap("put statement", err)
	}
	q := db.newQuarantine()
	return wrap("put statement", db.tell(q, db.eventTx(ctx, func(tx bun.Tx) error {
		if err := db.putStatement(ctx, tx, chain, changes, heads); err != nil {
			return err
		}
		return db.putBalances(ctx, tx, balances, q)
	})))
}

func (db *DB) putStatement(ctx context.Context, tx bun.IDB, chain string, changes []query.BalanceChange, heads []query.StatementHead) error {
	if len(changes) > 0 {
		// The rows and, in the same transaction, their events (event.go).
		if err := db.insertChanges(ctx, tx, chain, changes); err != nil {
			return fmt.Errorf("balance_changes: %w", err)
		}
	}
	args := make([]any, 0, 5*len(heads))
	for _, h := range heads {
		args = append(args, chain, h.Address, h.Contract, h.Block, h.Balance)
	}
	if err := db.insert(ctx, tx, headsInsert, args, nil); err != nil {
		return fmt.Errorf("statement_heads: %w", err)
	}
	return nil
}

var headsInsert = &insertSpec{into: "statement_heads (chain, address, contract, block_number, balance)", width: 5,
	conflict: "ON CONFLICT (chain, address, contract) DO UPDATE SET block_number = EXCLUDED.block_number, balance = EXCLUDED.balance"}

// Head returns the newest stored block of chain: the checkpoint.
func (db *DB) Head(ctx context.Context, chain string) (query.Block, bool, error) {
	return db.Checkpoint(ctx, chain)
}
