package store

import (
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/wharfhq/wharf/query"
)

// The statements of the books reads (range.go). A read's text depends on
// its shape alone (the database, the list, an asset or not, the order, a
// cursor or not, which time bounds), never on its values, which are
// parameters: the text of each shape is built once, on its first read,
// and kept (rangeTexts); a read then only collects its arguments, by the
// same code that wrote the text. Built per request, the SQLite asset
// read's text (about 3 KB) cost 5 to 15 µs a request, and its
// statement-cache key as much again to hash.

// maxBlock is the upper block bound of a range without one.
const maxBlock = math.MaxInt64

// rangeShape is what a books read's text depends on, as bits.
type rangeShape uint8

const (
	shapePostgres rangeShape = 1 << iota
	shapeTx                  // the transactions list, else the statement
	shapeAsset               // one asset (the statement)
	shapeAscending
	shapeAfter // a cursor (the statement's rows of all assets, and transactions)
	shapeFromTime
	shapeToTime
	shapes = 1 << iota // the number of shapes
)

// rangeTexts keeps the text of each shape, built on its first read.
type rangeTexts [shapes]atomic.Pointer[string]

// sqlBuilder writes a books read's text, when text is not nil, and
// collects its arguments: add numbers a parameter as it is added. With
// text nil (the text is kept) it collects the arguments alone.
type sqlBuilder struct {
	text *strings.Builder
	args []any
}

// write appends s to the text.
func (b *sqlBuilder) write(s ...string) {
	if b.text == nil {
		return
	}
	for _, x := range s {
		b.text.WriteString(x)
	}
}

// add adds the parameter v and returns its placeholder ("" when no text
// is written).
func (b *sqlBuilder) add(v any) string {
	b.args = append(b.args, v)
	if b.text == nil {
		return ""
	}
	return "$" + strconv.Itoa(len(b.args))
}

// read returns the text and arguments of a read of shape, which build
// writes: the kept text when there is one.
func (t *rangeTexts) read(shape rangeShape, build func(*sqlBuilder)) (string, []any) {
	b := sqlBuilder{args: make([]any, 0, 16)}
	if p := t[shape].Load(); p != nil {
		build(&b)
		return *p, b.args
	}
	b.text = new(strings.Builder)
	build(&b)
	q := b.text.String()
	t[shape].Store(&q)
	return q, b.args
}

// blockBounds is r's block range narrowed to the cursor's block (the
// index is entered at the cursor, whatever the database makes of the
// row-value comparison that follows it); strict excludes the cursor's
// block itself (one asset: a block holds one row of it). Bounds that
// cross leave nothing.
func blockBounds(r query.Range, cursor *uint64, strict bool) (lo, hi uint64) {
	lo, hi = min(r.FromBlock, maxBlock), uint64(maxBlock)
	if r.HasToBlock {
		hi = min(r.ToBlock, maxBlock)
	}
	switch {
	case cursor == nil:
	case r.Ascending && strict:
		lo = max(lo, *cursor+1)
	case r.Ascending:
		lo = max(lo, *cursor)
	case strict && *cursor == 0:
		return 1, 0
	case strict:
		hi = min(hi, *cursor-1)
	default:
		hi = min(hi, *cursor)
	}
	return lo, hi
}

// fromTimeBlock and toTimeBlock map r's time bounds to blocks of table's
// rows of the address ($1 chain, $2 address), by one probe of the
// block_time index each: the first block at or after the start, and the
// last before the end (none: a bound that leaves nothing).
func fromTimeBlock(b *sqlBuilder, table string, r query.Range) string {
	return `COALESCE((SELECT block_number FROM ` + table + `
			WHERE chain = $1 AND address = $2 AND block_time >= ` + b.add(ceilUnix(r.FromTime)) + `
			ORDER BY block_time, block_number LIMIT 1), ` + strconv.FormatInt(maxBlock, 10) + `)`
}

func toTimeBlock(b *sqlBuilder, table string, r query.Range) string {
	return `COALESCE((SELECT block_number FROM ` + table + `
			WHERE chain = $1 AND address = $2 AND block_time < ` + b.add(ceilUnix(r.ToTime)) + `
			ORDER BY block_time DESC, block_number DESC LIMIT 1), -1)`
}

// timeWhere writes the conditions of r's time range on the rows of
// table, but for the bounds skipped.
func timeWhere(b *sqlBuilder, table string, r query.Range, skipFrom, skipTo bool) {
	if !r.FromTime.IsZero() && !skipFrom {
		b.write(` AND block_number >= `, fromTimeBlock(b, table, r))
	}
	if !r.ToTime.IsZero() && !skipTo {
		b.write(` AND block_number <= `, toTimeBlock(b, table, r))
	}
}

// ceilUnix is the first whole second at or after t: block times are
// whole seconds, so a block at or after (or before) 10.5 s is one at or
// after (before) 11 s.
func ceilUnix(t time.Time) int64 {
	if t.Nanosecond() != 0 {
		return t.Unix() + 1
	}
	return t.Unix()
}

// shapeOf is the shape of a books read of r.
func shapeOf(postgres, tx bool, r query.Range, after bool) rangeShape {
	var s rangeShape
	for _, bit := range []struct {
		on bool
		s  rangeShape
	}{{postgres, shapePostgres}, {tx, shapeTx}, {r.HasContract && !tx, shapeAsset}, {r.Ascending, shapeAscending},
		{after && !(r.HasContract && !tx), shapeAfter}, {!r.FromTime.IsZero(), shapeFromTime}, {!r.ToTime.IsZero(), shapeToTime}} {
		if bit.on {
			s |= bit.s
		}
	}
	return s
}

// stateRow is the first part of a books read: the requester's
// subscription state (subscription.go), one row at most, so that the
// read stops at the first it finds. On PostgreSQL, whose generic plan
// scans the small subscriptions and tracked tables (BenchmarkBooks has
// 100 rows in each) rather than probe their keys, it stopped the two
// scans at the first match: a statement page's PostgreSQL CPU went from
// 57-67 µs to 40-47 µs for the head alone (one client, same run).
const stateRow = `SELECT st.v FROM (SELECT ` + subscriptionState + ` AS v FROM ` + subscriptionTables + `
		WHERE s.account_id = $3 AND s.chain = $1 AND s.address = $2 LIMIT 1) AS st`

// changeRangeHead is the head of a statement range read: the state row,
// then the asset labels (a requester not subscribed gets neither).
const changeRangeHead = stateRow + `
		UNION ALL
		SELECT 'L' || b.asset || ' ' || b.contract || ' ' || CAST(b.decimals AS TEXT) || ' ' || b.symbol FROM balances AS b
		WHERE b.chain = $1 AND b.address = $2
		AND ` + subscribed + `
		UNION ALL
		`

// subscribed holds when the requester ($3) is subscribed to the address
// ($1, $2): the range reads check it too, so that a requester not
// subscribed gets no row at all.
const subscribed = `EXISTS (SELECT 1 FROM subscriptions WHERE account_id = $3 AND chain = $1 AND address = $2)`

// pageSelect opens the select of a books read's page, of a subquery p
// that reads it in its order with its LIMIT: on SQLite the page's
// documents as one value (pageCat), on PostgreSQL a row each.
func pageSelect(postgres bool) string {
	if postgres {
		return "SELECT p.doc FROM ("
	}
	return "SELECT " + pageCat + " FROM ("
}

// changeRangeQuery is the statement of a page of a statement in r after
// the cursor, at most limit rows, built whole (tests, plans).
func changeRangeQuery(postgres bool, account int64, chain, address string, r query.Range, after *query.ChangeCursor, limit int) (string, []any) {
	var t rangeTexts
	return t.read(shapeOf(postgres, false, r, after != nil), func(b *sqlBuilder) {
		buildChangeRange(b, postgres, account, chain, address, r, after, limit)
	})
}

// changeRangeRead is changeRangeQuery with the text kept in db.
func (db *DB) changeRangeRead(account int64, chain, address string, r query.Range, after *query.ChangeCursor, limit int) (string, []any) {
	return db.texts.read(shapeOf(db.postgres, false, r, after != nil), func(b *sqlBuilder) {
		buildChangeRange(b, db.postgres, account, chain, address, r, after, limit)
	})
}

// buildChangeRange writes the statement of a page of a statement.
func buildChangeRange(b *sqlBuilder, postgres bool, account int64, chain, address string, r query.Range, after *query.ChangeCursor, limit int) {
	b.add(chain)
	b.add(address)
	b.add(account)
	var cursor *uint64
	if after != nil {
		cursor = &after.Block
	}
	if r.HasContract && !postgres {
		assetRangeSQLite(b, r, cursor, limit)
		return
	}
	b.write(changeRangeHead, pageSelect(postgres), "SELECT doc FROM balance_changes ")
	dir, cmp := " DESC", " < "
	if r.Ascending {
		dir, cmp = "", " > "
	}
	if r.HasContract {
		// One asset on PostgreSQL: a range of balance_changes_contract,
		// the contract written as a range of one value and ordered by,
		// rather than as an equality that the planner drops from the
		// order (and then walks the chain's block index and filters: a
		// whole history for an asset that seldom moves).
		lo, hi := blockBounds(r, cursor, true)
		k := b.add(r.Contract)
		b.write("WHERE chain = $1 AND address = $2 AND contract >= ", k, " AND contract <= ", k,
			" AND block_number BETWEEN ", b.add(int64(lo)), " AND ", b.add(int64(hi)))
		timeWhere(b, "balance_changes", r, false, false)
		b.write("\n\t\tAND "+subscribed+"\n\t\tORDER BY contract", dir, ", block_number", dir, " LIMIT ", b.add(limit), ") AS p")
		return
	}
	lo, hi := blockBounds(r, cursor, false)
	b.write("WHERE chain = $1 AND address = $2 AND block_number BETWEEN ", b.add(int64(lo)), " AND ", b.add(int64(hi)))
	if after != nil {
		bn := b.add(int64(after.Block))
		b.write(" AND (block_number, contract)", cmp, "(", bn, ", ", b.add(after.Contract), ")")
	}
	timeWhere(b, "balance_changes", r, false, false)
	b.write("\n\t\tAND "+subscribed+"\n\t\tORDER BY block_number", dir, ", contract", dir, " LIMIT ", b.add(limit), ") AS p")
}

// denseBlocks is, for each row of a page of one asset on SQLite, how
// many of the address's blocks the page reads by the primary key before
// it reads the rest through the asset's index (assetRangeSQLite).
const denseBlocks = 4

// assetRangeSQLite writes the statement of a page of one asset on
// SQLite, where the table is clustered on its primary key (chain,
// address, block_number, contract) and balance_changes_contract holds the
// keys alone: a row found through the index costs a descent of the
// table's B-tree for its document (some 2 µs, over half of a page's read
// at 1,000,000 rows), while the next row of a primary key range costs a
// step. So the page is read in two parts, one after the other in the
// page's order, under one LIMIT: first a window of denseBlocks blocks
// for each row of the page, from the range's first block in its order
// (after the cursor, or the block a time bound maps to), read by the
// primary key, keeping the asset's rows (all the address's rows of those
// blocks are read, a step each); then, only when the window did not fill
// the page, the rest of the range, through the index (the index is
// named: SQLite bounds one column of an index by a range). An asset that
// moves in most of the address's blocks fills its pages from the window;
// one that seldom moves reads a window of other rows first (at most
// denseBlocks × the page size of the address's blocks), then its own rows
// a descent each. The window's bounds are parameters (a time bound moves
// them in the statement); a sum past the largest integer becomes a real
// in SQLite, above every block. At 1,000,000 rows (BenchmarkBooks'
// address, an asset in every other block): see docs/addrd.md.
func assetRangeSQLite(b *sqlBuilder, r query.Range, cursor *uint64, limit int) {
	lo, hi := blockBounds(r, cursor, true)
	// Each value is a parameter once, however often the text names it.
	k, l, h, w := b.add(r.Contract), b.add(int64(lo)), b.add(int64(hi)), b.add(int64(denseBlocks)*int64(limit))
	b.write(changeRangeHead, pageSelect(false))
	part := func(index, bounds, dir string, skipFrom, skipTo bool) {
		b.write("SELECT doc FROM (SELECT doc FROM balance_changes ", index, `
		WHERE chain = $1 AND address = $2 AND contract = `, k, " AND block_number BETWEEN ", bounds)
		timeWhere(b, "balance_changes", r, skipFrom, skipTo)
		b.write(" AND "+subscribed+"\n\t\tORDER BY block_number", dir, ")")
	}
	if r.Ascending {
		// The window's first block: the range's, or the time bound's.
		first := l
		if !r.FromTime.IsZero() {
			first = "max(" + l + ", " + fromTimeBlock(b, "balance_changes", r) + ")"
		}
		part("NOT INDEXED", first+" AND min("+h+", "+first+" + "+w+")", "", true, false)
		b.write("\n\t\tUNION ALL\n\t\t")
		part("INDEXED BY balance_changes_contract", first+" + "+w+" + 1 AND "+h, "", true, false)
	} else {
		last := h
		if !r.ToTime.IsZero() {
			last = "min(" + h + ", " + toTimeBlock(b, "balance_changes", r) + ")"
		}
		part("NOT INDEXED", "max("+l+", "+last+" - "+w+") AND "+last, " DESC", false, true)
		b.write("\n\t\tUNION ALL\n\t\t")
		part("INDEXED BY balance_changes_contract", l+" AND "+last+" - "+w+" - 1", " DESC", false, true)
	}
	b.write(" LIMIT ", b.add(limit), ") AS p")
}

// txRangeQuery is the statement of a page of an address's transactions
// in r (its block and time range and order; the filters are read from
// the documents) and its covered range, after the cursor, built whole
// (tests, plans). A row written before migration 0002, without a
// document, is its hash after a letter H (see joinTransactions).
func txRangeQuery(postgres bool, account int64, chain, address string, r query.Range, after *query.TxCursor, limit int) (string, []any) {
	var t rangeTexts
	return t.read(shapeOf(postgres, true, r, after != nil), func(b *sqlBuilder) { buildTxRange(b, postgres, account, chain, address, r, after, limit) })
}

// txRangeRead is txRangeQuery with the text kept in db.
func (db *DB) txRangeRead(account int64, chain, address string, r query.Range, after *query.TxCursor, limit int) (string, []any) {
	return db.texts.read(shapeOf(db.postgres, true, r, after != nil), func(b *sqlBuilder) { buildTxRange(b, db.postgres, account, chain, address, r, after, limit) })
}

func buildTxRange(b *sqlBuilder, postgres bool, account int64, chain, address string, r query.Range, after *query.TxCursor, limit int) {
	b.add(chain)
	b.add(address)
	b.add(account)
	b.write(stateRow+`
		UNION ALL
		`, pageSelect(postgres), `SELECT COALESCE(doc, 'H' || hash) AS doc FROM tx_addresses WHERE chain = $1 AND address = $2
		AND block_number >= `+coveredFrom)
	var cursor *uint64
	if after != nil {
		cursor = &after.BlockNumber
	}
	lo, hi := blockBounds(r, cursor, false)
	b.write(" AND block_number BETWEEN ", b.add(int64(lo)), " AND ", b.add(int64(hi)))
	timeWhere(b, "tx_addresses", r, false, false)
	dir, cmp := " DESC", " < "
	if r.Ascending {
		dir, cmp = "", " > "
	}
	if after != nil {
		bn := b.add(int64(after.BlockNumber))
		b.write(" AND (block_number, tx_index)", cmp, "(", bn, ", ", b.add(int64(after.Index)), ")")
	}
	b.write("\n\t\tAND "+subscribed+"\n\t\tORDER BY block_number", dir, ", tx_index", dir, " LIMIT ", b.add(limit), ") AS p")
}
