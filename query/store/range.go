package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wharfhq/wharf/query"
)

// The books reads: an address's statement or transactions in a
// block and time range, oldest or newest first, filtered. Like the pages
// (txpage.go) each is one statement that also reads the requester's
// subscription state, in one column: the state row (a letter S or A),
// for the statement the labels of the address's assets (L), then the
// documents (a digit). The block range, the order and an asset filter
// are SQL, on the keys of migrations 0003 and 0035; a time bound is
// mapped to the first or last block of the address at or after it by one
// probe of the block_time index, in the same statement. The filters that
// read a document (kind, counterparty, tokens only) are applied here, row
// by row, over batches of the range, reading at most a budget of rows a
// page: a sparse filter over a year of a busy address answers a short
// page and a token to go on rather than reading the year at once.

// sqlArgs numbers the parameters of a query as they are added.
type sqlArgs []any

func (a *sqlArgs) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// rangeBatch is the most rows a filtered read asks for at a time.
const rangeBatch = 500

// An ERC-1155 contract's statement rows are its ids' (holding keys
// contract/id), so a read of one contract through the asset's index
// finds none of them. A read of one contract whose first statement
// brings labels (the address's balances, which keep every holding it
// has had) naming ids of that contract stops there, before it passes on
// a row, and the contract is read as a collection instead: the address's
// rows in the range, kept row by row, as a kind is, when they are the
// contract's own or one of its ids'. A page token of such a read (a
// cursor on one of the ids) goes to the collection at once.

// errCollection stops a read of one contract that names ids of it.
var errCollection = errors.New("the contract has ERC-1155 ids: read as a collection")

// asCollection is r reading its contract's rows and its ids'.
func asCollection(r query.Range) query.Range {
	r.Collection, r.Contract, r.HasContract = r.Contract, "", false
	return r
}

// namesContract reports whether r keeps one token contract, not a
// holding of one id.
func namesContract(r query.Range) bool {
	return r.HasContract && r.Contract != "" && !strings.Contains(r.Contract, "/")
}

// collectionCursor reports whether after is on an id of r's contract.
func collectionCursor(r query.Range, after *query.ChangeCursor) bool {
	return namesContract(r) && after != nil && asCollection(r).InCollection(after.Contract)
}

// collectionLabels reports whether labels name an id of r's contract.
func collectionLabels(r query.Range, labels map[string]query.Label) bool {
	if !namesContract(r) {
		return false
	}
	c := asCollection(r)
	for k := range labels {
		if c.InCollection(k) {
			return true
		}
	}
	return false
}

// SubscriptionChangeRange implements query.Books.
func (db *DB) SubscriptionChangeRange(ctx context.Context, account int64, chain, address string, r query.Range, after *query.ChangeCursor, limit, budget int) (query.Subscription, query.ChangeRange, error) {
	if collectionCursor(r, after) {
		return db.changeRange(ctx, account, chain, address, asCollection(r), after, limit, budget)
	}
	sub, out, err := db.changeRange(ctx, account, chain, address, r, after, limit, budget)
	if errors.Is(err, errCollection) {
		return db.changeRange(ctx, account, chain, address, asCollection(r), after, limit, budget)
	}
	return sub, out, err
}

func (db *DB) changeRange(ctx context.Context, account int64, chain, address string, r query.Range, after *query.ChangeCursor, limit, budget int) (query.Subscription, query.ChangeRange, error) {
	out := query.ChangeRange{Labels: map[string]query.Label{}}
	if limit <= 0 {
		sub, err := db.Subscription(ctx, account, chain, address)
		return sub, out, wrap("statement range", err)
	}
	cursor := func(c query.BalanceChange) *query.ChangeCursor {
		return &query.ChangeCursor{Block: c.Block, Contract: c.Contract}
	}
	var (
		sub  query.Subscription
		err  error
		read int
	)
	filtered := r.Filtered()
	for n := 0; ; {
		// A filter that keeps most rows fills the page from one read of
		// its size; a sparser one reads twice as many rows each time.
		n = max(limit+1-len(out.Rows), min(2*n, rangeBatch))
		q, args := db.changeRangeRead(account, chain, address, r, after, n)
		var rows []query.BalanceChange
		sub, err = db.readRangePage(ctx, chain, address, q, args, out.Labels, func(doc string) error {
			c, err := parseChangeDoc(chain, address, doc)
			rows = append(rows, c)
			return err
		})
		if err != nil {
			return query.Subscription{}, query.ChangeRange{}, wrap("statement range", err)
		}
		if read == 0 && collectionLabels(r, out.Labels) {
			return query.Subscription{}, query.ChangeRange{}, errCollection
		}
		full := len(rows) == n
		var last *query.ChangeCursor
		if len(rows) > 0 {
			last = cursor(rows[len(rows)-1])
		}
		read += len(rows)
		keep := rows
		if filtered {
			if keep, err = db.filterChanges(ctx, chain, address, r, rows); err != nil {
				return query.Subscription{}, query.ChangeRange{}, wrap("statement range", err)
			}
		}
		for _, c := range keep {
			if len(out.Rows) == limit {
				out.Next = cursor(out.Rows[limit-1])
				return sub, out, nil
			}
			out.Rows = append(out.Rows, c)
		}
		switch {
		case !full:
			return sub, out, nil
		case len(out.Rows) == limit || read >= budget:
			out.Next = last
			return sub, out, nil
		}
		after = last
	}
}

// SubscriptionChangeRangeFunc implements query.Books: without a filter
// read from the documents, the page's documents are read in one
// statement (labels included) and each parsed into one reused row, as
// SubscriptionBalanceChangesFunc does; filtered, the rows of
// SubscriptionChangeRange are passed on.
func (db *DB) SubscriptionChangeRangeFunc(ctx context.Context, account int64, chain, address string, r query.Range, after *query.ChangeCursor, limit, budget int,
	fn func(*query.BalanceChange, query.Label) error) (query.Subscription, *query.ChangeCursor, error) {
	if collectionCursor(r, after) {
		return db.changeRangeFunc(ctx, account, chain, address, asCollection(r), after, limit, budget, fn)
	}
	sub, next, err := db.changeRangeFunc(ctx, account, chain, address, r, after, limit, budget, fn)
	if errors.Is(err, errCollection) {
		return db.changeRangeFunc(ctx, account, chain, address, asCollection(r), after, limit, budget, fn)
	}
	return sub, next, err
}

// changeRangeFunc is SubscriptionChangeRangeFunc of r as it is (or
// errCollection, before any row is passed on).
func (db *DB) changeRangeFunc(ctx context.Context, account int64, chain, address string, r query.Range, after *query.ChangeCursor, limit, budget int,
	fn func(*query.BalanceChange, query.Label) error) (query.Subscription, *query.ChangeCursor, error) {
	if r.Counterparty != "" || limit <= 0 {
		sub, page, err := db.changeRange(ctx, account, chain, address, r, after, limit, budget)
		if err != nil {
			return query.Subscription{}, nil, err
		}
		for i := range page.Rows {
			if err := fn(&page.Rows[i], query.LabelOf(page.Labels, page.Rows[i].Contract)); err != nil {
				return query.Subscription{}, nil, err
			}
		}
		return sub, page.Next, nil
	}
	var (
		labels     = map[string]query.Label{}
		docs       = make([]string, 0, min(limit+1, 64))
		c          query.BalanceChange
		sub        query.Subscription
		err        error
		sent, read int
		last       query.ChangeCursor // the last row passed to fn
	)
	filtered := r.Filtered()
	for n := 0; ; {
		n = max(limit+1-sent, min(2*n, rangeBatch))
		if !filtered {
			n = limit + 1 - sent
		}
		docs = docs[:0]
		q, args := db.changeRangeRead(account, chain, address, r, after, n)
		sub, err = db.readRangePage(ctx, chain, address, q, args, labels, func(doc string) error {
			docs = append(docs, doc)
			return nil
		})
		if err != nil {
			return query.Subscription{}, nil, wrap("statement range", err)
		}
		if read == 0 && collectionLabels(r, labels) {
			return query.Subscription{}, nil, errCollection
		}
		read += len(docs)
		for _, doc := range docs {
			if err := parseChangeDocInto(&c, chain, address, doc); err != nil {
				return query.Subscription{}, nil, wrap("statement range", err)
			}
			if filtered && !rowKept(r, &c) {
				continue
			}
			if sent == limit {
				return sub, &last, nil
			}
			if err := fn(&c, query.LabelOf(labels, c.Contract)); err != nil {
				return query.Subscription{}, nil, err
			}
			sent++
			last = query.ChangeCursor{Block: c.Block, Contract: c.Contract}
		}
		switch {
		case len(docs) < n:
			return sub, nil, nil
		case sent == limit || read >= budget:
			// c is the last row read: the next page goes on after it.
			return sub, &query.ChangeCursor{Block: c.Block, Contract: c.Contract}, nil
		}
		after = &query.ChangeCursor{Block: c.Block, Contract: c.Contract}
	}
}

// rowKept reports whether c passes r's filters read from its own
// document: a token's row when r asks for tokens, a cause of one of r's
// kinds.
func rowKept(r query.Range, c *query.BalanceChange) bool {
	if r.TokensOnly && c.Contract == "" || r.Collection != "" && c.Contract != r.Collection && !r.InCollection(c.Contract) {
		return false
	}
	return len(r.Kinds) == 0 || slices.ContainsFunc(c.Causes, func(cs query.Cause) bool { return slices.Contains(r.Kinds, cs.Kind) })
}

// SubscriptionTxRange implements query.Books.
func (db *DB) SubscriptionTxRange(ctx context.Context, account int64, chain, address string, r query.Range, after *query.TxCursor, limit, budget int) (query.Subscription, query.TxRange, error) {
	var out query.TxRange
	if limit <= 0 {
		sub, err := db.Subscription(ctx, account, chain, address)
		return sub, out, wrap("transaction range", err)
	}
	cursor := func(t query.Transaction) *query.TxCursor {
		return &query.TxCursor{BlockNumber: t.BlockNumber, Index: t.Index}
	}
	var (
		sub  query.Subscription
		err  error
		read int
	)
	filtered := r.Filtered() || r.HasContract
	for n := 0; ; {
		// A filter that keeps most rows fills the page from one read of
		// its size; a sparser one reads twice as many rows each time.
		n = max(limit+1-len(out.Txs), min(2*n, rangeBatch))
		q, args := db.txRangeRead(account, chain, address, r, after, n)
		var (
			rows    []query.Transaction
			missing []int // rows without a document
		)
		sub, err = db.readRangePage(ctx, chain, address, q, args, nil, func(doc string) error {
			if hash, ok := strings.CutPrefix(doc, "H"); ok {
				missing = append(missing, len(rows))
				rows = append(rows, query.Transaction{Hash: hash})
				return nil
			}
			rows = append(rows, readTxDoc(chain, doc, db.legacy))
			return nil
		})
		if err == nil && len(missing) > 0 {
			err = db.joinTransactions(ctx, chain, rows, missing)
		}
		if err == nil {
			err = db.fillTokens(ctx, db.r, rows)
		}
		if err != nil {
			return query.Subscription{}, query.TxRange{}, wrap("transaction range", err)
		}
		full := len(rows) == n
		var last *query.TxCursor
		if len(rows) > 0 {
			last = cursor(rows[len(rows)-1])
		}
		read += len(rows)
		for _, t := range rows {
			if filtered && !TxMatches(t, address, r) {
				continue
			}
			if len(out.Txs) == limit {
				out.Next = cursor(out.Txs[limit-1])
				return sub, out, nil
			}
			out.Txs = append(out.Txs, t)
		}
		switch {
		case !full:
			return sub, out, nil
		case len(out.Txs) == limit || read >= budget:
			out.Next = last
			return sub, out, nil
		}
		after = last
	}
}

// TxMatches reports whether t, listed for address, passes r's filters:
// a transfer touching address of one of r's kinds (or the fee or the
// mint, when address sent t), of r's asset, and a party of t that is r's
// counterparty.
func TxMatches(t query.Transaction, address string, r query.Range) bool {
	if r.Counterparty != "" && !txParty(t, r.Counterparty) {
		return false
	}
	// The fee and the mint are the sender's and no transfer of t.
	sender := t.From == address && (slices.Contains(r.Kinds, query.KindFee) || !t.Mint.IsZero() && slices.Contains(r.Kinds, query.KindMint))
	if len(r.Kinds) > 0 && !sender {
		found := false
		for _, f := range t.Transfers {
			if (f.From == address || f.To == address) && slices.Contains(r.Kinds, f.Kind) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if r.HasContract || r.TokensOnly {
		found := false
		for _, f := range t.Transfers {
			held := r.HasContract && (f.Contract == r.Contract || query.HoldingKey(f.Asset, f.Contract, f.TokenID) == r.Contract)
			if (f.From == address || f.To == address) && (r.TokensOnly && f.Contract != "" || held) {
				found = true
				break
			}
		}
		// The fee is a movement of the native coin.
		if !found && !(r.HasContract && r.Contract == "" && t.From == address) {
			return false
		}
	}
	return true
}

// txParty reports whether a is a party of t: its sender, recipient, the
// contract it created (a creation has no recipient) or one side of a
// transfer.
func txParty(t query.Transaction, a string) bool {
	if t.From == a || t.To == a || slices.Contains(t.Parties, a) {
		return true
	}
	for _, f := range t.Transfers {
		if f.From == a || f.To == a {
			return true
		}
	}
	return false
}

// filterChanges keeps the statement rows that pass r's filters read from
// documents: a cause of one of r's kinds, a token, and a cause whose
// transaction has r's counterparty as a party (read from the stored
// transactions, one statement a batch).
func (db *DB) filterChanges(ctx context.Context, chain, address string, r query.Range, rows []query.BalanceChange) ([]query.BalanceChange, error) {
	out := rows[:0:0]
	for i := range rows {
		if rowKept(r, &rows[i]) {
			out = append(out, rows[i])
		}
	}
	if r.Counterparty == "" || len(out) == 0 {
		return out, nil
	}
	hashes := map[string]bool{}
	for _, c := range out {
		for _, cs := range c.Causes {
			if cs.TxHash != "" {
				hashes[cs.TxHash] = false
			}
		}
	}
	list := make([]string, 0, len(hashes))
	for h := range hashes {
		list = append(list, h)
	}
	for part := range slices.Chunk(list, batch) {
		args := sqlArgs{chain}
		marks := make([]string, len(part))
		for i, h := range part {
			marks[i] = args.add(h)
		}
		rows, err := db.r.DB.QueryContext(ctx, "SELECT doc FROM transactions WHERE chain = $1 AND hash IN ("+strings.Join(marks, ", ")+")", args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var doc sql.NullString
			if err := rows.Scan(&doc); err != nil {
				rows.Close()
				return nil, err
			}
			if !doc.Valid {
				continue
			}
			t := readTxDoc(chain, doc.String, db.legacy)
			hashes[t.Hash] = txParty(t, r.Counterparty)
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	kept := out[:0]
	for _, c := range out {
		if slices.ContainsFunc(c.Causes, func(cs query.Cause) bool {
			return hashes[cs.TxHash] && (len(r.Kinds) == 0 || slices.Contains(r.Kinds, cs.Kind))
		}) {
			kept = append(kept, c)
		}
	}
	return kept, nil
}

// readRangePage runs q, a books read in one column (see the top of this
// file): it reads the state row into the subscription, the label rows
// into labels (when not nil) and passes each document to row, in order.
// Errors: query.ErrNotSubscribed.
func (db *DB) readRangePage(ctx context.Context, chain, address, q string, args []any, labels map[string]query.Label, row func(doc string) error) (query.Subscription, error) {
	if labels == nil {
		labels = map[string]query.Label{}
	}
	return db.readLabelledPage(ctx, chain, address, q, args, labels, func(doc string, _ bool) error { return row(doc) })
}

// parseLabel reads a label row: asset, contract, decimals and symbol,
// separated by spaces (the symbol last: it may hold spaces).
func parseLabel(s string) (string, query.Label, error) {
	asset, rest, ok1 := strings.Cut(s, " ")
	contract, rest, ok2 := strings.Cut(rest, " ")
	dec, symbol, ok3 := strings.Cut(rest, " ")
	d, err := strconv.Atoi(dec)
	if !ok1 || !ok2 || !ok3 || err != nil {
		return "", query.Label{}, fmt.Errorf("asset label %q", s)
	}
	return contract, query.Label{Asset: asset, Symbol: symbol, Decimals: d}, nil
}

// Balances as of a block: for each asset of the address (its balances
// rows, with their labels), the last statement row at or before the
// block, else the first after it (whose opening balance it was), in one
// statement with the subscription state and the stored head. Each is one
// probe of balance_changes_contract. With a
// time, the block is the last of the address's statement rows at or
// before it.
const (
	balancesAtBlock = `WITH at AS (SELECT CAST($4 AS BIGINT) AS n)`
	balancesAtTime  = `WITH at AS (SELECT (SELECT block_number FROM balance_changes
		WHERE chain = $2 AND address = $3 AND block_time <= $4
		ORDER BY block_time DESC, block_number DESC LIMIT 1) AS n)`
	balancesAtRest = `
	SELECT ` + subscriptionState + `, at.n, k.number, k.time, b.contract, b.asset, b.symbol, b.name, b.decimals, b.amount, %s, %s
	FROM at CROSS JOIN ` + subscriptionTables + `
	LEFT JOIN checkpoints AS k ON k.chain = s.chain
	LEFT JOIN balances AS b ON b.chain = s.chain AND b.address = s.address
	WHERE s.account_id = $1 AND s.chain = $2 AND s.address = $3
	ORDER BY CASE WHEN b.asset = 'native' THEN 0 ELSE 1 END, b.contract`
	// The rows below and above the block, on PostgreSQL, on
	// balance_changes_contract: the contract as a range of one value and
	// the order by it, so that no plan walks the chain's block index
	// instead (with the contract an equality, which drops it from the
	// order, a custom plan did: a walk back through the whole chain for
	// an asset without a row there, 2 s over 1,000,000 rows, for the
	// first five runs of each connection's prepared statement). Row
	// values with the correlated contract are a start key of the address
	// alone: 1,650 buffers and 12 ms over 100,000 rows.
	belowPostgres = `(SELECT c.doc FROM balance_changes AS c
			WHERE c.chain = $2 AND c.address = $3 AND c.contract >= b.contract AND c.contract <= b.contract AND c.block_number <= at.n
			ORDER BY c.contract DESC, c.block_number DESC LIMIT 1)`
	abovePostgres = `(SELECT c.doc FROM balance_changes AS c
			WHERE c.chain = $2 AND c.address = $3 AND c.contract >= b.contract AND c.contract <= b.contract AND c.block_number > at.n
			ORDER BY c.contract, c.block_number LIMIT 1)`
	// On SQLite, which bounds an index by row values of constants only
	// (with the correlated contract it walks the address's whole range):
	// equalities, and the index named.
	belowSQLite = `(SELECT c.doc FROM balance_changes AS c INDEXED BY balance_changes_contract
			WHERE c.chain = $2 AND c.address = $3 AND c.contract = b.contract AND c.block_number <= at.n
			ORDER BY c.block_number DESC LIMIT 1)`
	aboveSQLite = `(SELECT c.doc FROM balance_changes AS c INDEXED BY balance_changes_contract
			WHERE c.chain = $2 AND c.address = $3 AND c.contract = b.contract AND c.block_number > at.n
			ORDER BY c.block_number LIMIT 1)`
)

// SubscriptionBalancesAt implements query.Books. The head's hashes are
// not read. Errors: query.ErrNotSubscribed, query.ErrBeforeStatement (a
// time before the statement's first row).
func (db *DB) SubscriptionBalancesAt(ctx context.Context, account int64, chain, address string, block uint64, at time.Time) (query.Subscription, []query.AsOf, query.Block, error) {
	rest := db.balancesRest()
	q, args := balancesAtBlock+rest, []any{account, chain, address, int64(min(block, maxBlock))}
	if !at.IsZero() {
		q, args[3] = balancesAtTime+rest, at.Unix()
	}
	rows, err := db.queryHot(ctx, q, args...)
	if err != nil {
		return query.Subscription{}, nil, query.Block{}, wrap("balances at", err)
	}
	defer rows.Close()
	var (
		sub   = query.Subscription{Chain: chain, Address: address}
		head  query.Block
		out   = []query.AsOf{}
		found bool
		state string
		n     sql.NullInt64
		k     sql.NullInt64
		kt    sql.NullTime
		b     struct {
			contract, asset, symbol, name, below, above sql.NullString
			amount                                      sql.Null[query.Amount]
			decimals                                    sql.NullInt64
		}
	)
	for rows.Next() {
		if err := rows.Scan(&state, &n, &k, &kt, &b.contract, &b.asset, &b.symbol, &b.name, &b.decimals, &b.amount, &b.below, &b.above); err != nil {
			return query.Subscription{}, nil, query.Block{}, wrap("balances at", err)
		}
		if !found {
			if err := parseState(&sub, state); err != nil {
				return query.Subscription{}, nil, query.Block{}, wrap("balances at", err)
			}
			head.Number, head.Time, found = uint64(k.Int64), utc(kt.Time), true
		}
		if !n.Valid {
			continue // a time before the statement
		}
		if !b.contract.Valid {
			continue // no balances
		}
		a := query.AsOf{Contract: b.contract.String, Label: query.Label{Asset: b.asset.String, Symbol: b.symbol.String,
			Name: b.name.String, Decimals: int(b.decimals.Int64)}, Block: uint64(n.Int64), Amount: b.amount.V}
		switch {
		case b.below.Valid:
			c, err := parseChangeDoc(chain, address, b.below.String)
			if err != nil {
				return query.Subscription{}, nil, query.Block{}, wrap("balances at", err)
			}
			a.Amount, a.Row, a.RowFound, a.Time = c.BalanceAfter, c.Block, true, c.Time
		case b.above.Valid:
			c, err := parseChangeDoc(chain, address, b.above.String)
			if err != nil {
				return query.Subscription{}, nil, query.Block{}, wrap("balances at", err)
			}
			a.Amount = c.BalanceAfter.Sub(c.Amount)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return query.Subscription{}, nil, query.Block{}, wrap("balances at", err)
	}
	if !found {
		return query.Subscription{}, nil, query.Block{}, wrap("balances at", query.ErrNotSubscribed)
	}
	if !n.Valid {
		return sub, nil, head, query.ErrBeforeStatement
	}
	return sub, out, head, nil
}

// balancesRest is the dialect's balancesAtRest.
func (db *DB) balancesRest() string {
	if db.postgres {
		return fmt.Sprintf(balancesAtRest, belowPostgres, abovePostgres)
	}
	return fmt.Sprintf(balancesAtRest, belowSQLite, aboveSQLite)
}
