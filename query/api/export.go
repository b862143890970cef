package api

import (
	"bufio"
	"encoding/csv"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

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
	"amount", "amount_decimal", "balance_after", "balance_after_decimal", "kinds", "transaction_hashes", "reconciled", "difference"}

// exportBatch is how many statement rows an export reads at a time: its
// memory is a batch, whatever the range.
const exportBatch = 2000

// exportChanges is GET /v1/chains/{chain}/addresses/{address}/balance_changes:export.
func (s *Server) exportChanges(w http.ResponseWriter, r *http.Request, a query.Account) error {
	chain, address, err := s.chainAddress(r)
	if err != nil {
		return err
	}
	req, err := parseBooks(r, false)
	if err != nil {
		return err
	}
	if _, ok := r.URL.Query()["order_by"]; !ok {
		req.r.Ascending = true
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
	ctx := r.Context()
	sub, page, err := s.store.SubscriptionChangeRange(ctx, a.ID, chain, address, req.r, nil, exportBatch, 10*exportBatch)
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
	h.Set("Content-Type", "text/csv; charset=utf-8; header=present")
	h.Set("Content-Disposition", `attachment; filename="`+chain+"-"+address+`-statement.csv"`)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Trailer", "Addrd-Export-Rows")
	w.WriteHeader(http.StatusOK)

	bw := bufio.NewWriterSize(w, 64<<10)
	cw := csv.NewWriter(bw)
	rec := make([]string, len(exportColumns))
	var rows int
	// gone ends an export whose client left: nothing is written on this
	// side, so nothing is left half-written.
	gone := func() error {
		s.log.InfoContext(ctx, "export cut by the client", "request_id", requestID(r), "rows", rows)
		return nil
	}
	if err := cw.Write(exportColumns); err != nil {
		return gone()
	}
	for {
		for i := range page.Rows {
			exportRecord(rec, chain, address, &page.Rows[i], query.LabelOf(page.Labels, page.Rows[i].Contract))
			if err := cw.Write(rec); err != nil {
				return gone()
			}
		}
		rows += len(page.Rows)
		cw.Flush()
		if cw.Error() != nil {
			return gone()
		}
		if page.Next == nil {
			break
		}
		_, page, err = s.store.SubscriptionChangeRange(ctx, a.ID, chain, address, req.r, page.Next, exportBatch, 10*exportBatch)
		if err != nil {
			if ctx.Err() != nil {
				return gone()
			}
			// Half a file must not pass for a whole one: the response is
			// cut, so the client sees a broken transfer, not an end.
			s.log.ErrorContext(ctx, "export cut by an error", "request_id", requestID(r), "rows", rows, "err", err)
			panic(http.ErrAbortHandler)
		}
	}
	if err := bw.Flush(); err != nil {
		return gone()
	}
	h.Set("Addrd-Export-Rows", strconv.Itoa(rows))
	return nil
}

// exportRecord fills rec with the CSV record of statement row c.
func exportRecord(rec []string, chain, address string, c *query.BalanceChange, l query.Label) {
	rec[0], rec[1] = chain, address
	rec[2] = strconv.FormatUint(c.Block, 10)
	rec[3] = timestamp(c.Time)
	contract, id := query.SplitHoldingKey(c.Contract)
	rec[4], rec[5], rec[6], rec[7] = l.Asset, contract, id, safeCell(l.Symbol)
	rec[8] = strconv.Itoa(l.Decimals)
	rec[9], rec[10] = c.Amount.String(), decimal(c.Amount.String(), l.Decimals)
	rec[11], rec[12] = c.BalanceAfter.String(), decimal(c.BalanceAfter.String(), l.Decimals)
	var kinds, hashes []string
	for _, cs := range c.Causes {
		if !slices.Contains(kinds, cs.Kind) {
			kinds = append(kinds, cs.Kind)
		}
		if cs.TxHash != "" && !slices.Contains(hashes, cs.TxHash) {
			hashes = append(hashes, cs.TxHash)
		}
	}
	rec[13], rec[14] = strings.Join(kinds, " "), strings.Join(hashes, " ")
	rec[15] = ""
	if c.Checked {
		rec[15] = strconv.FormatBool(c.Reconciled)
	}
	rec[16] = c.Difference.String()
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

// decimal writes an amount in base units (a signed decimal integer) in
// whole units of an asset of that many decimals, exactly, without
// trailing zeros: "-1500000000000000000" with 18 is "-1.5".
func decimal(amount string, decimals int) string {
	if decimals <= 0 || amount == "" {
		return amount
	}
	sign, digits := "", amount
	if digits[0] == '-' {
		sign, digits = "-", digits[1:]
	}
	if len(digits) <= decimals {
		digits = strings.Repeat("0", decimals-len(digits)+1) + digits
	}
	whole, frac := digits[:len(digits)-decimals], strings.TrimRight(digits[len(digits)-decimals:], "0")
	if frac == "" {
		return sign + whole
	}
	return sign + whole + "." + frac
}
