package api

import (
	"bufio"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wharfhq/wharf/query"
)

// The export of a statement as CSV is a custom method (AIP-136),
// GET …/balance_changes:export, rather than the list answering
// Accept: text/csv: it is another operation over the same rows, not
// another representation of a page. It is not paged (no page_size, no
// page_token: the whole range, streamed), it lists oldest first by
// default, it bounds the range at the newest stored block when it starts,
// and its response is a file rather than a message; the API's methods
// and its OpenAPI description name each operation by its path, a proxy
// or cache needs no Vary: Accept, and `curl -o` takes it as it is.

// exportColumns are the CSV columns, in order (docs/addrd.md, "For the
// books", says what each holds).
var exportColumns = []string{"chain", "address", "block_number", "time", "asset", "contract", "token_id", "symbol", "decimals",
	"amount", "amount_decimal", "balance_after", "balance_after_decimal", "kinds", "transaction_hashes", "reconciled", "difference",
	"fee_execution", "fee_blob", "fee_l1", "fee_operator"}

// exportBatch is how many statement rows an export reads at a time: its
// memory is a batch, whatever the range.
const exportBatch = 2000

// exportChanges is GET /v1/chains/{chain}/addresses/{address}/balance_changes:export.
func (s *Server) exportChanges(w http.ResponseWriter, r *http.Request, a query.Account) error {
	chain, address, err := s.chainAddress(r)
	if err != nil {
		return err
	}
	req, err := parseBooks(r, false, s.pathAddresses(r))
	if err != nil {
		return err
	}
	if _, ok := r.URL.Query()["order_by"]; !ok {
		req.r.Ascending = true
	}
	if req.endMark != "" {
		if err := s.endAt(r.Context(), a, chain, address, &req); err != nil {
			return err
		}
	}
	// The range ends at the newest block stored when the export starts,
	// so that the file is the same whenever it is asked again.
	head, _, err := s.store.Head(r.Context(), chain)
	if err != nil {
		return err
	}
	if !req.r.HasToBlock || req.r.ToBlock > head.Number {
		req.r.ToBlock, req.r.HasToBlock = head.Number, true
	}
	if req.r.FromBlock > req.r.ToBlock {
		// start_block after the newest stored block: nothing to list yet,
		// but the coverage check below still applies.
		req.r.FromBlock = req.r.ToBlock + 1
	}
	// Each batch of rows is appended as CSV to one buffer, parsed into
	// one reused row, then written out: the memory is a batch's text.
	ctx := r.Context()
	buf := make([]byte, 0, 64<<10)
	var rows int
	batch := func(after *query.ChangeCursor) (query.Subscription, *query.ChangeCursor, error) {
		buf = buf[:0]
		return s.store.SubscriptionChangeRangeFunc(ctx, a.ID, chain, address, req.r, after, exportBatch, 10*exportBatch,
			func(c *query.BalanceChange, l query.Label) error {
				buf = appendExportRecord(buf, chain, address, c, l)
				rows++
				return nil
			})
	}
	sub, next, err := batch(nil)
	if errors.Is(err, query.ErrNotSubscribed) {
		return notSubscribed(address)
	}
	if err != nil {
		return err
	}
	if err := checkCovered(sub, req); err != nil {
		return err
	}
	setState(w, sub)
	h := w.Header()
	if req.endMark != "" {
		h.Set(headerEndBlock, strconv.FormatUint(req.r.ToBlock, 10))
	}
	h.Set("Content-Type", "text/csv; charset=utf-8; header=present")
	h.Set("Content-Disposition", `attachment; filename="`+chain+"-"+address+`-statement.csv"`)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Trailer", "Addrd-Export-Rows")
	w.WriteHeader(http.StatusOK)

	bw := bufio.NewWriterSize(w, 64<<10)
	// gone ends an export whose client left: nothing is written on this
	// side, so nothing is left half-written.
	gone := func() error {
		s.log.InfoContext(ctx, "export cut by the client", "request_id", requestID(r), "rows", rows)
		return nil
	}
	if _, err := bw.WriteString(strings.Join(exportColumns, ",") + "\n"); err != nil {
		return gone()
	}
	// Each batch is written without the store turn, taken again for the
	// next: a client that reads slowly holds only its own connection.
	write := func() error {
		_, err := bw.Write(buf)
		if err == nil && next == nil {
			err = bw.Flush()
		}
		return err
	}
	for {
		if err := s.outsideTurn(r, write); err != nil {
			return gone()
		}
		if next == nil {
			break
		}
		if _, next, err = batch(next); err != nil {
			if ctx.Err() != nil {
				return gone()
			}
			// Half a file must not pass for a whole one: the response is
			// cut, so the client sees a broken transfer, not an end.
			s.log.ErrorContext(ctx, "export cut by an error", "request_id", requestID(r), "rows", rows, "err", err)
			panic(http.ErrAbortHandler)
		}
	}
	h.Set("Addrd-Export-Rows", strconv.Itoa(rows))
	return nil
}

// appendExportRecord appends the CSV record of statement row c, in the
// order of exportColumns, without allocating: every field but the chain
// and the symbol is digits, hex, a kind or a time, which CSV writes as
// they are.
func appendExportRecord(b []byte, chain, address string, c *query.BalanceChange, l query.Label) []byte {
	contract, id := query.SplitHoldingKey(c.Contract)
	b = appendCSVField(b, chain)
	b = append(b, ',')
	b = append(b, address...)
	b = append(b, ',')
	b = strconv.AppendUint(b, c.Block, 10)
	b = append(b, ',')
	if !c.Time.IsZero() {
		b = c.Time.UTC().AppendFormat(b, time.RFC3339)
	}
	b = append(b, ',')
	b = append(b, l.Asset...)
	b = append(b, ',')
	b = append(b, contract...)
	b = append(b, ',')
	b = append(b, id...)
	b = append(b, ',')
	b = appendAmounts(b, l, c.Amount, c.BalanceAfter)
	for i, cs := range c.Causes {
		if slices.ContainsFunc(c.Causes[:i], func(p query.Cause) bool { return p.Kind == cs.Kind }) {
			continue
		}
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, cs.Kind...)
	}
	b = append(b, ',')
	first := true
	for i, cs := range c.Causes {
		if cs.TxHash == "" || slices.ContainsFunc(c.Causes[:i], func(p query.Cause) bool { return p.TxHash == cs.TxHash }) {
			continue
		}
		if !first {
			b = append(b, ' ')
		}
		first = false
		b = append(b, cs.TxHash...)
	}
	b = append(b, ',')
	if c.Checked {
		b = strconv.AppendBool(b, c.Reconciled)
	}
	b = append(b, ',')
	b = append(b, c.Difference.String()...)
	return append(appendFeeColumns(b, c), '\n')
}

// appendFeeColumns appends the fee_* columns: what the row's fees paid
// for, in wei (a fee stored without parts counts as execution); empty
// when the row has no fee.
func appendFeeColumns(b []byte, c *query.BalanceChange) []byte {
	var sum query.FeeParts
	paid := false
	for _, cs := range c.Causes {
		if cs.Kind != query.KindFee {
			continue
		}
		paid = true
		if p := cs.Fee; p != nil {
			sum = query.FeeParts{Execution: sum.Execution.Add(p.Execution), Blob: sum.Blob.Add(p.Blob), L1: sum.L1.Add(p.L1), Operator: sum.Operator.Add(p.Operator)}
		} else {
			sum.Execution = sum.Execution.Sub(cs.Amount)
		}
	}
	if !paid {
		return append(b, ",,,,"...)
	}
	for _, a := range []query.Amount{sum.Execution, sum.Blob, sum.L1, sum.Operator} {
		b = append(append(b, ','), a.String()...)
	}
	return b
}

// appendCSVField appends s as a CSV field, quoted (its quotes doubled)
// when it holds a comma, a quote, a line break or leading space, as
// encoding/csv writes it.
func appendCSVField(b []byte, s string) []byte {
	if s == "" || !strings.ContainsAny(s, ",\"\r\n") && s[0] != ' ' && s[0] != '\t' {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

// safeCell keeps a text cell from being read as a formula by a
// spreadsheet (a token's symbol is whatever its deployer chose): one that
// begins with =, +, -, @, a tab or a carriage return gets a leading '.
func safeCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// appendDecimal appends an amount in base units (a signed decimal
// integer) in whole units of an asset of that many decimals, exactly,
// without trailing zeros: "-1500000000000000000" with 18 is "-1.5".
func appendDecimal(b []byte, amount string, decimals int) []byte {
	if decimals <= 0 || amount == "" {
		return append(b, amount...)
	}
	digits := amount
	if digits[0] == '-' {
		b, digits = append(b, '-'), digits[1:]
	}
	whole, frac := "0", digits
	if len(digits) > decimals {
		whole, frac = digits[:len(digits)-decimals], digits[len(digits)-decimals:]
	}
	b = append(b, whole...)
	zeros := decimals - len(frac) // leading zeros of the fraction
	frac = strings.TrimRight(frac, "0")
	if frac == "" {
		return b
	}
	b = append(b, '.')
	for range zeros {
		b = append(b, '0')
	}
	return append(b, frac...)
}

// appendAmounts appends the CSV fields of a row's holding and amounts,
// each followed by a comma: the symbol, the decimals, the amount and the
// balance after it, each in base units and as a decimal.
func appendAmounts(b []byte, l query.Label, amount, after query.Amount) []byte {
	b = appendCSVField(b, safeCell(l.Symbol))
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(l.Decimals), 10)
	b = append(b, ',')
	for _, a := range []string{amount.String(), after.String()} {
		b = append(b, a...)
		b = append(b, ',')
		b = appendDecimal(b, a, l.Decimals)
		b = append(b, ',')
	}
	return b
}
