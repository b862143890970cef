package api

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/rowjson"
)

// A page of transactions is the largest body the API writes (50 of them
// by default, ~30 kB), and encoding/json's reflection was a large part of
// its cost. appendTransactionPage writes the same bytes as json.Marshal
// of the transactionPage toTransaction makes, by hand, straight from the
// stored transactions into a pooled buffer; a test holds the two equal.

// bufPool recycles response buffers; big ones are dropped, so that one
// page of 1000 does not pin its memory.
type bufPool struct{ p sync.Pool }

const maxPooledBuf = 256 << 10

func (p *bufPool) get() *[]byte {
	if b, ok := p.p.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 64<<10)
	return &b
}

func (p *bufPool) put(b *[]byte) {
	if cap(*b) <= maxPooledBuf {
		*b = (*b)[:0]
		p.p.Put(b)
	}
}

// writePage writes body, a page as JSON, with the headers writeJSON
// sets and its length.
func writePage(w http.ResponseWriter, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// appendTransactionPage appends json.Marshal of the transactionPage of
// txs (see toTransaction), as the transactions handler writes it a
// transaction at a time: the opening, appendTransactionItem of each, and
// appendPageEnd.
func appendTransactionPage(b []byte, txs []query.Transaction, only, next string, at tip) []byte {
	b = append(b, transactionPageOpen...)
	for i := range txs {
		b = appendTransactionItem(b, i, &txs[i], false, only, at)
	}
	return appendPageEnd(b, next)
}

// transactionPageOpen opens a transactionPage.
const transactionPageOpen = `{"transactions":[`

// appendTransactionItem appends t, the i-th transaction of a page (from
// 0), with only the transfers touching only (all when only is ""). With
// plain, every string of t is query.PlainText (its document says so) and
// is copied without a look at its bytes.
func appendTransactionItem(b []byte, i int, t *query.Transaction, plain bool, only string, at tip) []byte {
	if i > 0 {
		b = append(b, ',')
	}
	return appendTransaction(b, t, plain, only, at)
}

// appendPageEnd closes a page's list (of transactions or of statement
// rows) and appends its next_page_token.
func appendPageEnd(b []byte, next string) []byte {
	b = append(b, `],"next_page_token":`...)
	b = rowjson.AppendString(b, next)
	return append(b, '}')
}

func appendTransaction(b []byte, t *query.Transaction, plain bool, only string, at tip) []byte {
	b = append(b, `{"hash":`...)
	b = rowjson.AppendText(b, t.Hash, plain)
	b = append(b, `,"block_number":`...)
	b = strconv.AppendUint(b, t.BlockNumber, 10)
	b = append(b, `,"block_hash":`...)
	b = rowjson.AppendText(b, t.BlockHash, plain)
	b = append(b, `,"block_time":"`...)
	if !t.BlockTime.IsZero() {
		// Digits, '-', ':', 'T' and 'Z': nothing to escape.
		b = t.BlockTime.UTC().AppendFormat(b, time.RFC3339)
	}
	b = append(b, `","index":`...)
	b = strconv.AppendUint(b, uint64(t.Index), 10)
	b = append(b, `,"status":`...)
	b = rowjson.AppendText(b, t.Status, plain)
	b = append(b, `,"from":`...)
	b = rowjson.AppendText(b, t.From, plain)
	b = append(b, `,"to":`...)
	b = rowjson.AppendText(b, t.To, plain)
	b = append(b, `,"value":`...)
	b = rowjson.AppendAmount(b, t.Value)
	b = append(b, `,"fee":`...)
	b = rowjson.AppendAmount(b, t.Fee)
	if p := t.FeeParts; p.Split() {
		b = rowjson.AppendFeeParts(append(b, `,"fee_parts":`...), p)
	}
	if !t.Mint.IsZero() {
		b = rowjson.AppendAmount(append(b, `,"mint":`...), t.Mint)
	}
	b = appendDetail(b, t.Detail)
	b = append(b, `,"confirmations":`...)
	b = strconv.AppendUint(b, confirmations(t, at.head), 10)
	b = append(b, `,"finality":"`...) // a word: nothing to escape
	b = append(b, at.fin.Of(t.BlockNumber)...)
	b = append(b, '"')
	b = append(b, `,"transfers":[`...)
	n := 0
	for i := range t.Transfers {
		f := &t.Transfers[i]
		if only != "" && f.From != only && f.To != only {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = appendTransfer(b, f, plain)
	}
	if t.Unreadable != "" {
		b = append(b, `],"unreadable":`...)
		b = rowjson.AppendText(b, t.Unreadable, false)
		return append(b, '}')
	}
	return append(b, "]}"...)
}

// appendDetail appends the members of detail, a family's document of a
// transaction (a JSON object, as the store keeps it), each after a comma:
// nothing for none.
func appendDetail(b []byte, detail []byte) []byte {
	if len(detail) < 2 {
		return b
	}
	members := bytes.TrimSpace(detail[1 : len(detail)-1])
	if len(members) == 0 {
		return b
	}
	b = append(b, ',')
	return append(b, members...)
}

func appendTransfer(b []byte, f *query.Transfer, plain bool) []byte {
	b = append(b, `{"log_index":`...)
	b = strconv.AppendInt(b, int64(f.Position), 10)
	b = append(b, `,"kind":`...)
	b = rowjson.AppendText(b, f.Kind, plain)
	b = append(b, `,"asset":`...)
	b = rowjson.AppendText(b, f.Asset, plain)
	b = append(b, `,"contract":`...)
	b = rowjson.AppendText(b, f.Contract, plain)
	b = append(b, `,"token_id":`...)
	b = rowjson.AppendText(b, f.TokenID, plain)
	b = append(b, `,"symbol":`...)
	b = rowjson.AppendText(b, f.Symbol, plain)
	b = append(b, `,"name":`...)
	b = rowjson.AppendText(b, f.Name, plain)
	b = append(b, `,"decimals":`...)
	b = strconv.AppendInt(b, int64(f.Decimals), 10)
	b = append(b, `,"from":`...)
	b = rowjson.AppendText(b, f.From, plain)
	b = append(b, `,"to":`...)
	b = rowjson.AppendText(b, f.To, plain)
	b = append(b, `,"amount":`...)
	b = rowjson.AppendAmount(b, f.Amount)
	b = append(b, `,"call_type":`...)
	b = rowjson.AppendText(b, f.CallType, plain)
	b = append(b, `,"call_path":`...)
	b = rowjson.AppendText(b, f.CallPath, plain)
	b = append(b, `,"error":`...)
	b = rowjson.AppendText(b, f.Error, plain)
	return append(b, '}')
}
