package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"

	"github.com/wharfhq/wharf/query"
)

// The transactions page is the API's hottest read. It is one range read
// of tx_addresses, whose rows carry their transaction's document (see
// txdoc.go), through prepared statements on PostgreSQL (prepared.go): no
// query is built, parsed or planned per request, and no reflection scans
// the rows. A requester's page reads its subscription, with its state, in
// the same statement.
const (
	txPageFirst = `SELECT doc FROM tx_addresses WHERE chain = $1 AND address = $2
		ORDER BY block_number DESC, tx_index DESC LIMIT $3`
	txPageAfter = `SELECT doc FROM tx_addresses WHERE chain = $1 AND address = $2 AND (block_number, tx_index) < ($3, $4)
		ORDER BY block_number DESC, tx_index DESC LIMIT $5`
	// A requester's page: a row of its subscription's state (none: not
	// subscribed), then the page, in one column (readPage). The page
	// checks the subscription too (an uncorrelated EXISTS, evaluated
	// once), so that a requester not subscribed gets no row at all.
	// (A page as one value, pagecat.go, did not make it cheaper on either
	// database: docs/addrd.md.)
	subscriptionTxPageFirst = `SELECT ` + subscriptionState + ` FROM ` + subscriptionTables + `
		WHERE s.account_id = $4 AND s.chain = $1 AND s.address = $2
		UNION ALL
		SELECT p.doc FROM (SELECT doc FROM tx_addresses WHERE chain = $1 AND address = $2
			AND block_number >= ` + coveredFrom + `
			AND EXISTS (SELECT 1 FROM subscriptions WHERE account_id = $4 AND chain = $1 AND address = $2)
			ORDER BY block_number DESC, tx_index DESC LIMIT $3) AS p`
	subscriptionTxPageAfter = `SELECT ` + subscriptionState + ` FROM ` + subscriptionTables + `
		WHERE s.account_id = $6 AND s.chain = $1 AND s.address = $2
		UNION ALL
		SELECT p.doc FROM (SELECT doc FROM tx_addresses WHERE chain = $1 AND address = $2
			AND (block_number, tx_index) < ($3, $4) AND block_number >= ` + coveredFrom + `
			AND EXISTS (SELECT 1 FROM subscriptions WHERE account_id = $6 AND chain = $1 AND address = $2)
			ORDER BY block_number DESC, tx_index DESC LIMIT $5) AS p`
)

// coveredFrom is the first block of the address's covered range (none
// before its first sync): a requester sees exactly the address's
// transactions from its history start to the stored head, never one stored
// earlier because another requester tracked a counterparty.
const coveredFrom = `COALESCE((SELECT history_start FROM tracked WHERE chain = $1 AND address = $2), 9223372036854775807)`

// errNoDoc reports a page row written before migration 0002.
var errNoDoc = errors.New("row without a transaction document")

// AccountTransactions is Transactions for a requester, who must be
// subscribed to address.
func (db *DB) AccountTransactions(ctx context.Context, account int64, chain, address string, after *query.TxCursor, limit int) ([]query.Transaction, error) {
	_, txs, err := db.SubscriptionTransactions(ctx, account, chain, address, after, limit)
	return txs, err
}

// SubscriptionTransactions returns the account's subscription to
// address, with its state and covered range (not its creation time), and
// the page of
// AccountTransactions, in one read. Errors: query.ErrNotSubscribed.
func (db *DB) SubscriptionTransactions(ctx context.Context, account int64, chain, address string, after *query.TxCursor, limit int) (query.Subscription, []query.Transaction, error) {
	txs := make([]query.Transaction, 0, min(max(limit, 0), 64))
	sub, err := db.SubscriptionTransactionsFunc(ctx, account, chain, address, after, limit, func(t *query.Transaction, _ bool) error {
		c := *t
		c.Transfers = nil
		if len(t.Transfers) > 0 {
			c.Transfers = slices.Clone(t.Transfers)
		}
		txs = append(txs, c)
		return nil
	})
	if err != nil {
		return query.Subscription{}, nil, err
	}
	return sub, txs, nil
}

// SubscriptionTransactionsFunc is SubscriptionTransactions handing the
// page to fn, one transaction at a time, in order, instead of returning
// it: the API writes each as it comes, and a page allocates no
// transaction. The transaction fn gets, and its Transfers, are reused for
// the next one (its strings are not); an error of fn ends the read and is
// returned as it is. The documents are all read before the first call, so
// the connection goes back to the pool before fn runs. fn's plain is the
// document's (txdoc.go); false for a row read by joins.
func (db *DB) SubscriptionTransactionsFunc(ctx context.Context, account int64, chain, address string, after *query.TxCursor, limit int, fn func(t *query.Transaction, plain bool) error) (query.Subscription, error) {
	if limit <= 0 {
		sub, err := db.Subscription(ctx, account, chain, address)
		return sub, wrap("transactions", err)
	}
	q, args := subscriptionTxPageFirst, []any{chain, address, limit, account}
	if after != nil {
		q, args = subscriptionTxPageAfter, []any{chain, address, after.BlockNumber, after.Index, limit, account}
	}
	var (
		docs  = make([]string, 0, min(limit, 64))
		noDoc bool
	)
	sub, err := db.readPage(ctx, chain, address, q, args, func(doc string, ok bool) error {
		noDoc = noDoc || !ok
		docs = append(docs, doc)
		return nil
	})
	if err != nil {
		return query.Subscription{}, wrap("transactions", err)
	}
	if noDoc {
		// A row written before migration 0002: the page by joins.
		txs, err := db.transactions(ctx, db.r, chain, address, after, sub.HistoryStart, limit, true)
		if err != nil {
			return query.Subscription{}, wrap("transactions", err)
		}
		for i := range txs {
			if err := fn(&txs[i], false); err != nil {
				return query.Subscription{}, err
			}
		}
		return sub, nil
	}
	// The documents that leave their tokens' metadata to the tokens
	// table are read twice: once for the contracts they name (one read
	// of the table for the page), once to answer.
	var (
		t      query.Transaction
		tokens = tokenSet{}
	)
	for _, doc := range docs {
		if strings.HasPrefix(doc, "1:"+txDocShared) {
			readTxDocInto(&t, chain, doc, db.legacy)
			tokens.add(&t)
		}
	}
	if err := tokens.read(ctx, db.r); err != nil {
		return query.Subscription{}, wrap("transactions", err)
	}
	for _, doc := range docs {
		plain := readTxDocInto(&t, chain, doc, db.legacy)
		if len(tokens) > 0 && !tokens.fill(&t) {
			plain = false
		}
		if err := fn(&t, plain); err != nil {
			return query.Subscription{}, err
		}
	}
	return sub, nil
}

// readPage runs q, a read of a page of documents with the requester's
// subscription state, all in one column: the row of the state
// (subscriptionState, which begins with a letter) and the rows of the
// page (documents, which begin with a digit; NULL in a row written
// before documents were), or the page as one row (pageCat, which begins
// with "P": the books reads on SQLite). It passes each document to row, in
// order (ok false for none), and returns the subscription;
// query.ErrNotSubscribed when there is none. The state row is told apart
// by its first byte, not by its place, which UNION ALL does not promise
// (the page's rows come in the page's order). A page row costs what it
// cost without the state: its document alone, scanned as the string the
// driver made of it (no copy; the parsed fields share its bytes).
func (db *DB) readPage(ctx context.Context, chain, address, q string, args []any, row func(doc string, ok bool) error) (query.Subscription, error) {
	return db.readLabelledPage(ctx, chain, address, q, args, nil, row)
}

// readLabelledPage is readPage for a read that also yields label rows
// (a letter L, then parseLabel's fields): with labels not nil they are
// read into it; with labels nil there are none and no row is one.
func (db *DB) readLabelledPage(ctx context.Context, chain, address, q string, args []any, labels map[string]query.Label, row func(doc string, ok bool) error) (query.Subscription, error) {
	rows, err := db.queryHot(ctx, q, args...)
	if err != nil {
		return query.Subscription{}, err
	}
	defer rows.Close()
	var (
		sub   = query.Subscription{Chain: chain, Address: address}
		v     sql.NullString
		found bool
	)
	for rows.Next() {
		if err := rows.Scan(&v); err != nil {
			return query.Subscription{}, err
		}
		switch s := v.String; {
		case s != "" && s[0] == 'P':
			if err := eachPageDoc(s[1:], row); err != nil {
				return query.Subscription{}, err
			}
			continue
		case s != "" && (s[0] == 'S' || s[0] == 'A'):
			if err := parseState(&sub, s); err != nil {
				return query.Subscription{}, err
			}
			found = true
			continue
		case labels != nil && s != "" && s[0] == 'L':
			contract, l, err := parseLabel(s[1:])
			if err != nil {
				return query.Subscription{}, err
			}
			labels[contract] = l
			continue
		}
		if err := row(v.String, v.Valid); err != nil {
			return query.Subscription{}, err
		}
	}
	if err := rows.Err(); err != nil {
		return query.Subscription{}, err
	}
	if !found {
		return query.Subscription{}, query.ErrNotSubscribed
	}
	return sub, nil
}

// transactionPage reads a page of documents with q; errNoDoc when a row
// has none, and the caller reads the page by joins instead.
func (db *DB) transactionPage(ctx context.Context, chain, q string, args []any, limit int) ([]query.Transaction, error) {
	rows, err := db.queryHot(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	txs := make([]query.Transaction, 0, min(limit, 64))
	var doc sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&doc); err != nil {
			return nil, err
		}
		if doc == nil {
			return nil, errNoDoc
		}
		txs = append(txs, readTxDoc(chain, string(doc), db.legacy))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return txs, db.fillTokens(ctx, db.r, txs)
}
