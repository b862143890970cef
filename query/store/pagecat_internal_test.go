package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
)

// pageCatRunes are what TestPageCatSQLite's documents are made of: the
// framing's own bytes (digits, ':', '-', the letters that mark a state,
// label or page row) and multibyte UTF-8, so that a length in characters
// rather than bytes, or a document split at the wrong colon, shows.
var pageCatRunes = []rune("0123456789::--PSAL \"\\é日本🙂")

// TestPageCatSQLite: a page read through pageCat on SQLite splits back
// (eachPageDoc) into exactly the page's documents, in the page's order,
// NULL ones told as such: random documents of the framing's bytes and
// multibyte UTF-8 (empty ones too), pages of every size from empty to
// more than the table holds. The seed is printed on failure.
func TestPageCatSQLite(t *testing.T) {
	rng := testenv.Rand(t, 28)
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "pagecat.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.w.ExecContext(ctx, "CREATE TABLE pagecat (k INTEGER PRIMARY KEY, doc TEXT)"); err != nil {
		t.Fatal(err)
	}
	type doc struct {
		s  string
		ok bool
	}
	var docs []doc // in k order
	for k := range 1 + rng.IntN(60) {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteRune(pageCatRunes[rng.IntN(len(pageCatRunes))])
		}
		d := doc{b.String(), rng.IntN(8) > 0}
		v := sql.NullString{String: d.s, Valid: d.ok}
		if !d.ok {
			d.s = ""
		}
		if _, err := db.w.ExecContext(ctx, "INSERT INTO pagecat (k, doc) VALUES (?, ?)", k, v); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	newest := slices.Clone(docs)
	slices.Reverse(newest)
	for limit := range len(docs) + 2 {
		var v string
		err := db.w.QueryRowContext(ctx, "SELECT "+pageCat+" FROM (SELECT doc FROM pagecat ORDER BY k DESC LIMIT ?) AS p", limit).Scan(&v)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(v, "P") {
			t.Fatalf("limit %d: %q does not begin with P", limit, v)
		}
		var got []doc
		if err := eachPageDoc(v[1:], func(s string, ok bool) error { got = append(got, doc{s, ok}); return nil }); err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
		if want := newest[:min(limit, len(newest))]; !slices.Equal(got, want) {
			t.Fatalf("limit %d:\n got %+v\nwant %+v", limit, got, want)
		}
	}
}

// TestEachPageDoc: documents framed by hand split back, and a value that
// is not a run of frames is an error.
func TestEachPageDoc(t *testing.T) {
	stop := errors.New("stop")
	for _, c := range []struct {
		page    string
		want    []string // "-" for a row without a document
		wantErr bool
	}{
		{"", nil, false},
		{"0:", []string{""}, false},
		{"3:1:2-5:ab:cd", []string{"1:2", "-", "ab:cd"}, false},
		{"3:日", []string{"日"}, false},
		{"4:日", nil, true},
		{"--", []string{"-", "-"}, false},
		{"3:ab", nil, true},
		{"x", nil, true},
		{"2", nil, true},
	} {
		var got []string
		err := eachPageDoc(c.page, func(s string, ok bool) error {
			if !ok {
				s = "-"
			}
			got = append(got, s)
			return nil
		})
		if (err != nil) != c.wantErr || (!c.wantErr && !slices.Equal(got, c.want)) {
			t.Errorf("%q: %q, %v; want %q (error %v)", c.page, got, err, c.want, c.wantErr)
		}
	}
	if err := eachPageDoc("1:a1:b", func(string, bool) error { return stop }); err != stop {
		t.Errorf("an error of row: %v, want it as it is", err)
	}
}
