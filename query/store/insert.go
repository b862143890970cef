package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"
)

// The fetcher's writes (StoreBlocks) go through prepared multi-row
// INSERT statements with bound values. Before, bun wrote every value into
// the statement's text: on SQLite, writing the text (quoting each
// document, three copies of it a transaction) and parsing it again were
// 30% of a block's CPU (BenchmarkStoreBlocks' profile), and on
// PostgreSQL the server parsed and planned each statement anew. Now a
// statement of k rows is prepared once per connection and a batch binds
// its rows in statements of 64 rows and the powers of two below, so that
// a table has at most seven statements whatever a batch holds.

// insertSpec is an INSERT statement of one table: its columns, what to do
// with a row whose key exists, and what it returns.
type insertSpec struct {
	// into is the table and its columns: "t (a, b, c)".
	into  string
	width int // the number of columns
	// ignore skips a row whose key exists: INSERT OR IGNORE on SQLite (a
	// statement that cannot abort halfway writes no statement journal),
	// ON CONFLICT DO NOTHING on PostgreSQL.
	ignore bool
	// conflict is the ON CONFLICT clause of an upsert, the same on both.
	conflict string
	// returning, when not "", is a RETURNING clause.
	returning string
}

// maxInsertRows is the most rows of one statement.
const maxInsertRows = 64

// text is s's statement of rows rows, with placeholders of the dialect.
func (s *insertSpec) text(rows int, postgres bool) string {
	var q strings.Builder
	switch {
	case s.ignore && !postgres:
		q.WriteString("INSERT OR IGNORE INTO ")
	default:
		q.WriteString("INSERT INTO ")
	}
	q.WriteString(s.into)
	q.WriteString(" VALUES ")
	n := 1
	for r := range rows {
		if r > 0 {
			q.WriteString(", ")
		}
		q.WriteByte('(')
		for c := range s.width {
			if c > 0 {
				q.WriteString(", ")
			}
			// SQLite looks a numbered parameter's name up in a list at
			// every bind, each bind a scan of it: anonymous ones there.
			if postgres {
				q.WriteByte('$')
				q.WriteString(strconv.Itoa(n))
				n++
			} else {
				q.WriteByte('?')
			}
		}
		q.WriteByte(')')
	}
	if s.ignore && postgres {
		q.WriteString(" ON CONFLICT DO NOTHING")
	}
	if s.conflict != "" {
		q.WriteString(" " + s.conflict)
	}
	if s.returning != "" {
		q.WriteString(" RETURNING " + s.returning)
	}
	return q.String()
}

// writeStmts holds the prepared statements of the writes, prepared on
// the writer (db.w) before the transaction that uses them (ready: on
// SQLite the writer is one connection, which the transaction holds) and
// closed by DB.Close. database/sql prepares a statement again on a
// transaction's connection where it was not yet.
type writeStmts struct {
	done atomic.Bool // every one of writeSpecs is prepared
	mu   sync.Mutex
	m    map[writeKey]*sql.Stmt
}

type writeKey struct {
	spec *insertSpec
	rows int
}

// ready prepares the statements of specs, of every number of rows insert
// runs, that are not prepared yet.
func (c *writeStmts) ready(ctx context.Context, db *DB, specs ...*insertSpec) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range specs {
		for rows := maxInsertRows; rows > 0; rows /= 2 {
			k := writeKey{s, rows}
			if _, ok := c.m[k]; ok {
				continue
			}
			st, err := db.w.DB.PrepareContext(ctx, s.text(rows, db.postgres))
			if err != nil {
				return fmt.Errorf("prepare insert into %s: %w", s.into, err)
			}
			if c.m == nil {
				c.m = make(map[writeKey]*sql.Stmt)
			}
			c.m[k] = st
		}
	}
	return nil
}

// writeSpecs are the inserts prepareWrites prepares.
var writeSpecs = []*insertSpec{blocksInsert, transactionsInsert, transfersInsert, txAddressesInsert, tokensInsert,
	balancesInsert, headsInsert, changesInsert, eventsInsert}

// prepareWrites prepares the inserts of the chain's data, once, before a
// write's transaction begins.
func (db *DB) prepareWrites(ctx context.Context) error {
	if db.writes.done.Load() {
		return nil
	}
	if err := db.writes.ready(ctx, db, writeSpecs...); err != nil {
		return err
	}
	db.writes.done.Store(true)
	return nil
}

// get returns the statement of s of rows rows, if it is prepared.
func (c *writeStmts) get(s *insertSpec, rows int) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[writeKey{s, rows}]
}

func (c *writeStmts) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := closeStmts(c.m)
	c.m = nil
	c.done.Store(false)
	return err
}

// insert runs s over args, the values of its rows one after the other
// (width values a row), in tx. When s returns rows, each is handed to
// scan.
func (db *DB) insert(ctx context.Context, tx bun.IDB, s *insertSpec, args []any, scan func(*sql.Rows) error) error {
	if len(args)%s.width != 0 {
		return fmt.Errorf("insert into %s: %d values for rows of %d", s.into, len(args), s.width)
	}
	for i, a := range args {
		v, err := bindable(a)
		if err != nil {
			return fmt.Errorf("insert into %s: %w", s.into, err)
		}
		args[i] = v
	}
	sqlTx, ok := tx.(bun.Tx)
	if !ok {
		return fmt.Errorf("insert into %s: not in a transaction", s.into)
	}
	for rows := len(args) / s.width; rows > 0; {
		k := maxInsertRows
		for k > rows {
			k /= 2
		}
		part := args[:k*s.width]
		args, rows = args[k*s.width:], rows-k
		// Not prepared (a write without ready): the text, bound all the same.
		var err error
		if st := db.writes.get(s, k); st != nil {
			txSt := sqlTx.Tx.StmtContext(ctx, st)
			err = run(ctx, txSt.ExecContext, txSt.QueryContext, part, scan)
			txSt.Close()
		} else {
			q := s.text(k, db.postgres)
			err = run(ctx, func(ctx context.Context, args ...any) (sql.Result, error) {
				return sqlTx.Tx.ExecContext(ctx, q, args...)
			},
				func(ctx context.Context, args ...any) (*sql.Rows, error) {
					return sqlTx.Tx.QueryContext(ctx, q, args...)
				}, part, scan)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// run executes a statement by exec, or by query when scan reads what it
// returns.
func run(ctx context.Context, exec func(context.Context, ...any) (sql.Result, error), query func(context.Context, ...any) (*sql.Rows, error),
	args []any, scan func(*sql.Rows) error) error {
	if scan == nil {
		_, err := exec(ctx, args...)
		return err
	}
	rows, err := query(ctx, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
		if err := scan(rows); err != nil {
			rows.Close()
			return err
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	return rows.Err()
}

// bindable is v as bun wrote it into a statement's text, so that a row
// stores the same bytes as before: a time in UTC at microseconds, in
// bun's layout; a string with invalid UTF-8 with each bad byte made
// U+FFFD; a string with a NUL byte refused (bun wrote an error into the
// text, failing the statement).
func bindable(v any) (any, error) {
	switch v := v.(type) {
	case string:
		return bunText(v)
	case time.Time:
		return bunTime(v), nil
	}
	return v, nil
}

// bunTime is t as bun writes a time.
func bunTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.999999-07:00") }

var errNul = errors.New("a string holds a NUL byte")

// bunText is s as bun writes a string.
func bunText(s string) (string, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return "", errNul
	}
	if utf8.ValidString(s) {
		return s, nil
	}
	b := make([]byte, 0, len(s)+8)
	for _, r := range s {
		b = utf8.AppendRune(b, r)
	}
	return string(b), nil
}
