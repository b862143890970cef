package store

import (
	"errors"
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"github.com/wharfhq/wharf/query"
)

// A transaction document is a whole transaction with its transfers,
// written into each of its tx_addresses rows (migration 0002), so that a
// page of an address's transactions is one range read of that table.
//
// It is a run of fields, each "<length in bytes, decimal>:<bytes>":
//
//	version "6", plain ("1" when every field but the detail is
//	query.PlainText, so that a page writes the transaction's strings out
//	as JSON without looking at them again; "0" otherwise), hash, block
//	number, block hash, block time (Unix nanoseconds; empty for the zero
//	time), index, status, from, to, value, fee, the fee's parts
//	(execution, blob, L1, operator), mint, the number of parties and
//	each party, the family's detail (a JSON object, or empty), then
//	fourteen fields per transfer: log index, asset, contract, from, to,
//	amount, kind, symbol, decimals, name, token id, call type, call path,
//	error
//
// Documents of versions 1 to 5 were written before chain families, with
// the EVM's fields in the document itself: txdoc_legacy.go reads them,
// and migration 0088 rewrote those stored then. Lengths rather than
// separators, so that no value needs escaping; text, so that SQL can
// write it too (benchdata does).
//
// Version 7 is version 6 with a token transfer's symbol the id of its
// row in the tokens table (migration 0090, tokens.go), its name empty and
// its decimals 0: the store keeps a token's metadata once, and a read
// fills it in from there (tokenSet). Its plain flag is about the fields
// the document holds.
const txDocVersion = "6"

// txDocShared is the version of a document whose token metadata is in
// the tokens table.
const txDocShared = "7"

// appendTxDoc appends the document of t, of version 6: every field in
// the document. On PostgreSQL the block time keeps microseconds, as its
// column does, so both paths read alike.
func appendTxDoc(b []byte, t query.Transaction, postgres bool) []byte {
	return appendTxDocAs(b, t, postgres, txDocVersion, nil)
}

// appendSharedTxDoc appends the document of t of version 7, which the
// store writes: its token transfers name their rows in the tokens table
// by ids (putTokens), which holds every one of them.
func appendSharedTxDoc(b []byte, t query.Transaction, postgres bool, ids map[tokenKey]int64) []byte {
	return appendTxDocAs(b, t, postgres, txDocShared, ids)
}

func appendTxDocAs(b []byte, t query.Transaction, postgres bool, version string, ids map[tokenKey]int64) []byte {
	bt := ""
	if !t.BlockTime.IsZero() {
		tm := t.BlockTime
		if postgres {
			tm = tm.Truncate(time.Microsecond)
		}
		bt = strconv.FormatInt(tm.UnixNano(), 10)
	}
	b = appendField(b, version)
	b = appendField(b, "1")
	flag, start := len(b)-1, len(b)
	for _, s := range []string{t.Hash, strconv.FormatUint(t.BlockNumber, 10), t.BlockHash, bt,
		strconv.FormatUint(uint64(t.Index), 10), t.Status, t.From, t.To, t.Value.String(), t.Fee.String(),
		t.FeeParts.Execution.String(), t.FeeParts.Blob.String(), t.FeeParts.L1.String(), t.FeeParts.Operator.String(), t.Mint.String(),
		strconv.Itoa(len(t.Parties))} {
		b = appendField(b, s)
	}
	for _, p := range t.Parties {
		b = appendField(b, p)
	}
	core := query.PlainText(string(b[start:]))
	b = appendField(b, string(t.Detail))
	start = len(b)
	for _, f := range t.Transfers {
		symbol, decimals, name := f.Symbol, strconv.Itoa(f.Decimals), f.Name
		if version == txDocShared && isToken(f) {
			symbol, decimals, name = strconv.FormatInt(ids[keyOf(f)], 10), "0", ""
		}
		for _, s := range []string{strconv.Itoa(f.Position), f.Asset, f.Contract, f.From, f.To, f.Amount.String(), f.Kind, symbol, decimals,
			name, f.TokenID, f.CallType, f.CallPath, f.Error} {
			b = appendField(b, s)
		}
	}
	// Lengths and their colons are plain: the fields are if the run is.
	// The detail is JSON already, written out as it is.
	if !core || !query.PlainText(string(b[start:])) {
		b[flag] = '0'
	}
	return b
}

// txDocSize is about the length of t's document, to allocate it once.
func txDocSize(t query.Transaction) int {
	n := 320 + len(t.Detail) + 64*len(t.Parties)
	for _, f := range t.Transfers {
		n += 160 + len(f.Contract) + len(f.Symbol) + len(f.Name) + len(f.CallPath) + len(f.Error)
	}
	return n
}

func appendField(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	return append(b, s...)
}

var errTxDoc = errors.New("malformed transaction document")

// txDocReader reads the fields of a document in order, as substrings of
// it (one allocation a document, not one a field); the first error
// sticks. A page reads some 2,000 fields, so each is read with a loop
// over its bytes rather than through strconv: a length is at most 8
// digits, a number at most 19 (strconv reads the rare longer one).
type txDocReader struct {
	s   string
	err error
}

// maxFieldDigits bounds a field's length prefix (a field under 100 MB).
const maxFieldDigits = 8

func (r *txDocReader) string() string {
	// Most lengths are one or two digits (an address is 42 bytes, a hash
	// 66): read those first.
	if s := r.s; r.err == nil && len(s) >= 3 {
		c, d := s[0]-'0', s[1]-'0'
		switch {
		case c <= 9 && s[1] == ':' && int(c) <= len(s)-2:
			r.s = s[2+c:]
			return s[2 : 2+c]
		case c <= 9 && d <= 9 && s[2] == ':' && int(c)*10+int(d) <= len(s)-3:
			n := int(c)*10 + int(d)
			r.s = s[3+n:]
			return s[3 : 3+n]
		}
	}
	return r.longString()
}

// longString is string for any length.
func (r *txDocReader) longString() string {
	if r.err != nil {
		return ""
	}
	s, n, i := r.s, 0, 0
	for ; i < len(s) && i <= maxFieldDigits; i++ {
		c := s[i] - '0'
		if c > 9 {
			break
		}
		n = n*10 + int(c)
	}
	if i == 0 || i > maxFieldDigits || i == len(s) || s[i] != ':' || n > len(s)-i-1 {
		r.err = errTxDoc
		return ""
	}
	f := s[i+1 : i+1+n]
	r.s = s[i+1+n:]
	return f
}

// amount reads a field that is an amount (query.ParseAmount); with
// orZero, an empty field is zero.
func (r *txDocReader) amount() query.Amount { return r.amountOr(false) }

func (r *txDocReader) amountOr(orZero bool) query.Amount {
	f := r.string()
	if r.err != nil || (orZero && f == "") {
		return query.Amount{}
	}
	a, err := query.ParseAmount(f)
	if err != nil {
		r.err = fmt.Errorf("%w: %w", errTxDoc, err)
	}
	return a
}

// int reads a field that is a signed decimal (strconv.ParseInt's).
func (r *txDocReader) int() int64 { return r.signed(r.string()) }

// signed reads f, a field read, as int does.
func (r *txDocReader) signed(f string) int64 {
	if r.err != nil {
		return 0
	}
	if len(f) > 1 && f[0] == '-' {
		if n, ok := digits(f[1:]); ok {
			return -int64(n)
		}
	} else if n, ok := digits(f); ok {
		return int64(n)
	}
	n, err := strconv.ParseInt(f, 10, 64)
	if err != nil {
		r.err = errTxDoc
	}
	return n
}

// uint reads a field that is an unsigned decimal (strconv.ParseUint's).
func (r *txDocReader) uint() uint64 { return r.unsigned(r.string()) }

// unsigned reads f, a field read, as uint does.
func (r *txDocReader) unsigned(f string) uint64 {
	if r.err != nil {
		return 0
	}
	if n, ok := digits(f); ok {
		return n
	}
	n, err := strconv.ParseUint(f, 10, 64)
	if err != nil {
		r.err = errTxDoc
	}
	return n
}

// digits reads s, 1 to 18 decimal digits (below 2^63, so that int
// negates it); ok false otherwise, and strconv decides.
func digits(s string) (n uint64, ok bool) {
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		n = n*10 + uint64(c)
	}
	return n, true
}

// parseTxDoc decodes a document written by appendTxDoc into a transaction
// of chain.
func parseTxDoc(chain string, doc string, ld LegacyDetail) (query.Transaction, error) {
	var t query.Transaction
	if _, err := parseTxDocInto(&t, chain, doc, ld); err != nil {
		return query.Transaction{}, err
	}
	return t, nil
}

// parseTxDocInto is parseTxDoc into t, whose Transfers' and Parties'
// arrays it reuses (a page parses each of its documents into one
// transaction): the fields are substrings of doc, and the Detail the
// document's own bytes (never to be written to); nothing else is
// allocated. It says whether the document notes its strings plain. A
// document written before chain families is read with ld.
func parseTxDocInto(t *query.Transaction, chain string, doc string, ld LegacyDetail) (plain bool, err error) {
	r := txDocReader{s: doc}
	v := r.string()
	if r.err == nil && v != txDocVersion && v != txDocShared {
		if isLegacyTxDoc(v) {
			return parseLegacyTxDocInto(t, chain, doc, ld)
		}
		return false, fmt.Errorf("transaction document version %q: %w", v, errTxDoc)
	}
	switch r.string() {
	case "1":
		plain = true
	case "0":
	default:
		r.err = errTxDoc
	}
	*t = query.Transaction{Chain: chain, Hash: r.string(), BlockNumber: r.uint(), BlockHash: r.string(),
		Transfers: t.Transfers[:0], Parties: t.Parties[:0]}
	if bt := r.string(); bt != "" {
		t.BlockTime = time.Unix(0, r.signed(bt)).UTC()
	}
	t.Index = uint(r.uint())
	t.Status, t.From, t.To, t.Value, t.Fee = r.string(), r.string(), r.string(), r.amount(), r.amount()
	t.FeeParts = query.FeeParts{Execution: r.amount(), Blob: r.amount(), L1: r.amount(), Operator: r.amount()}
	t.Mint = r.amount()
	n := r.uint()
	if r.err == nil && n > uint64(len(r.s)) {
		r.err = errTxDoc // more parties than bytes left
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		t.Parties = append(t.Parties, r.string())
	}
	if len(t.Parties) == 0 {
		t.Parties = nil
	}
	if d := r.string(); d != "" {
		t.Detail = unsafe.Slice(unsafe.StringData(d), len(d))
	}
	parseTransfers(&r, t, true, true)
	if r.err != nil {
		return false, fmt.Errorf("transaction %s: %w", t.Hash, r.err)
	}
	if v == txDocShared {
		for i := range t.Transfers {
			if isToken(t.Transfers[i]) {
				t.Transfers[i].Decimals = tokenPending
			}
		}
	}
	return plain, nil
}

// parseTransfers reads the rest of a document, its transfers, into t:
// with kinds, the kind, symbol and decimals of each (versions 2 on),
// with full, its name, token id, call type, call path and error too
// (versions 3 on).
func parseTransfers(r *txDocReader, t *query.Transaction, kinds, full bool) {
	for r.err == nil && r.s != "" {
		// Read in place: a transfer is some 250 bytes to copy.
		t.Transfers = append(t.Transfers, query.Transfer{})
		f := &t.Transfers[len(t.Transfers)-1]
		f.Position = int(r.int())
		f.Asset, f.Contract, f.From, f.To, f.Amount = r.string(), r.string(), r.string(), r.string(), r.amount()
		if kinds {
			f.Kind, f.Symbol, f.Decimals = r.string(), r.string(), int(r.int())
		}
		if full {
			f.Name, f.TokenID, f.CallType, f.CallPath, f.Error = r.string(), r.string(), r.string(), r.string(), r.string()
		}
	}
}

// readTxDoc is parseTxDoc for a read that answers rows: a document that
// cannot be read is its row alone, so that one bad row fails itself and
// not the page (readTxDocInto).
func readTxDoc(chain string, doc string, ld LegacyDetail) query.Transaction {
	var t query.Transaction
	readTxDocInto(&t, chain, doc, ld)
	return t
}

// readTxDocInto is parseTxDocInto for a read that answers rows: when doc
// cannot be read, t is the transaction's key as far as the document's
// first fields say it (hash, block number and hash, time and index;
// none of them when those do not read either) and Unreadable says why.
func readTxDocInto(t *query.Transaction, chain string, doc string, ld LegacyDetail) (plain bool) {
	plain, err := parseTxDocInto(t, chain, doc, ld)
	if err == nil {
		return plain
	}
	*t = query.Transaction{Chain: chain, Transfers: t.Transfers[:0],
		Unreadable: query.ChainText("the stored transaction cannot be read: "+err.Error(), query.MaxReason)}
	r := txDocReader{s: doc}
	if v := r.string(); v == txDocVersion || v == txDocShared || v == "5" || v == "4" {
		r.string() // plain
	}
	hash, number, blockHash, bt, index := r.string(), r.uint(), r.string(), r.string(), r.uint()
	if r.err != nil {
		return false
	}
	t.Hash, t.BlockNumber, t.BlockHash, t.Index = query.ChainText(hash, 0), number, query.ChainText(blockHash, 0), uint(index)
	if bt != "" {
		if ns, err := strconv.ParseInt(bt, 10, 64); err == nil {
			t.BlockTime = time.Unix(0, ns).UTC()
		}
	}
	return false
}
