package store

import "fmt"

// On SQLite a page of documents can be read as one value rather than a
// row each (the books reads do, rangesql.go): the database concatenates
// the page's documents, each framed as a field of a document is
// ("<length in bytes>:<bytes>", txdoc.go), and eachPageDoc splits the
// value without copying (each document is a substring of it). It halves
// a page's allocations (a transactions page 261 -> 161); its CPU a
// request measured the same as a row a document within this machine's
// noise (one connection's sequential requests, medians of 80 blocks
// alternated in one process: 323 -> 335, 352 -> 372, 456 -> 458, 376 ->
// 381 µs), so the transactions page stays a row a document. On
// PostgreSQL string_agg cost the database what it saved the server
// (docs/addrd.md).
//
// A row without a document (written before migration 0002) is framed as
// "-", so that the reader knows to read the page by joins.
//
// pageCat is the select list of such a page, in place of the document
// column of a subquery p that reads the page, in its order and with its
// LIMIT. SQLite runs p as a co-routine that yields the rows as it walks
// the primary key (the plan has no sort), and group_concat takes them as
// they come. SQLite's documentation calls group_concat's order arbitrary
// without an ORDER BY of its own, and one would add a sort of the page to
// the plan: so TestPageCatSQLite holds the order, with SQLite's version
// pinned in go.mod.
// The value begins with "P", so that a page read in one column beside its
// subscription's state ("S" or "A") and labels ("L") is told from them
// by its first byte; an empty page is "P".
const pageCat = `'P' || COALESCE(group_concat(COALESCE(CAST(octet_length(p.doc) AS TEXT) || ':' || p.doc, '-'), ''), '')`

// eachPageDoc passes each document of page (a pageCat value after its
// "P") to row, in order: ok is false for a row without a document.
func eachPageDoc(page string, row func(doc string, ok bool) error) error {
	r := txDocReader{s: page}
	for r.s != "" {
		if r.s[0] == '-' {
			r.s = r.s[1:]
			if err := row("", false); err != nil {
				return err
			}
			continue
		}
		doc := r.longString()
		if r.err != nil {
			return fmt.Errorf("page of documents: %w", r.err)
		}
		if err := row(doc, true); err != nil {
			return err
		}
	}
	return nil
}
