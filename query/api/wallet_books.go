package api

// A wallet's statement in a range, paged, and as CSV: the books of a
// wallet as an address has them (books.go, export.go), over the rows the
// wallet's statement sums (walletBlocks).

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// kindWalletChanges: a wallet's statement.
const kindWalletChanges byte = 'v'

// walletRangeParams are the parameters a wallet's statement takes.
const walletRangeParams = "start_block, end_block, start_time, end_time, order_by"

// walletRows is a wallet's statement, oldest first: per block, its used
// addresses' rows summed, each with the balance after it and its
// transactions netted across the wallet.
func (s *Server) walletRows(ctx context.Context, a query.Account, wl query.Wallet, addrs []query.WalletAddress) ([]walletChange, []time.Time, error) {
	blocks, err := s.walletBlocks(ctx, a, wl, addrs, 0, math.MaxUint64)
	if err != nil {
		return nil, nil, err
	}
	numbers := make([]uint64, 0, len(blocks))
	for n := range blocks {
		numbers = append(numbers, n)
	}
	slices.Sort(numbers)
	rows := make([]walletChange, len(numbers))
	times := make([]time.Time, len(numbers))
	var running query.Amount
	for i, n := range numbers {
		b := blocks[n]
		running = running.Add(b.row.Amount)
		b.row.BalanceAfter = running
		if b.checked {
			b.row.Reconciled = ptr(b.agreed)
		}
		b.row.Transactions = make([]walletChangeTxBody, 0, len(b.order))
		for _, h := range b.order {
			t := b.txs[h]
			b.row.Transactions = append(b.row.Transactions, walletChangeTxBody{TxHash: h, Amount: t.amount, Fee: t.fee, Internal: t.internal()})
		}
		rows[i], times[i] = b.row, b.time
	}
	return rows, times, nil
}

// walletBooks reads a wallet books request: the wallet, its range and
// order, and with filters the address lists' filters too (a wallet's
// statement takes none: it is of the chain's coin), with
// end_block=finalized or safe at the chain's mark now.
func (s *Server) walletBooks(r *http.Request, a query.Account, paged, filters bool) (query.Wallet, []query.WalletAddress, bookRequest, error) {
	chainName, id, ws, _, err := s.chainWallet(r)
	if err != nil {
		return query.Wallet{}, nil, bookRequest{}, err
	}
	req, err := parseBooks(r, paged, s.pathAddresses(r))
	if err != nil {
		return query.Wallet{}, nil, bookRequest{}, err
	}
	if !filters && len(req.r.Kinds) > 0 || !filters && (req.r.HasContract || req.r.TokensOnly || req.r.Counterparty != "") {
		return query.Wallet{}, nil, bookRequest{}, errorf(codeInvalidArgument,
			"a wallet's statement is of its chain's coin and takes no kind, asset, contract, token_id or counterparty filter (it takes %s); filter an address's statement instead", walletRangeParams)
	}
	wl, addrs, err := ws.Wallet(r.Context(), a.ID, chainName, id)
	if errors.Is(err, query.ErrNotFound) {
		return wl, nil, req, errorf(codeNotFound, "the requester has no wallet %s on %s", quote(id), chainName)
	}
	if err != nil {
		return wl, nil, req, err
	}
	if req.endMark != "" && req.token == "" {
		at, err := s.head(r.Context(), chainName)
		if err != nil {
			return wl, nil, req, err
		}
		if at.fin.Source == "" {
			return wl, nil, req, errorf(codeInvalidArgument, "end_block=%s: no %s block of %s is recorded yet: the fetcher records one once it stores blocks", req.endMark, req.endMark, chainName)
		}
		req.r.ToBlock = at.fin.Finalized
		if req.endMark == query.FinalitySafe {
			req.r.ToBlock = at.fin.Safe
		}
	}
	return wl, addrs, req, nil
}

// inWalletRange reports whether the wallet row of block n at time t is
// in r's range.
func inWalletRange(r query.Range, n uint64, t time.Time) bool {
	return n >= r.FromBlock && (!r.HasToBlock || n <= r.ToBlock) &&
		(r.FromTime.IsZero() || !t.Before(r.FromTime)) && (r.ToTime.IsZero() || t.Before(r.ToTime))
}

// walletDigest binds a wallet statement's page token to its range and
// order, and to the mark its end_block named.
func walletDigest(r query.Range, mark string) []byte {
	if mark != "" {
		r.ToBlock = 0 // carried beside the digest: the mark's block at the first page
	}
	text := append(appendRangeText(nil, r), " end_block="...)
	sum := sha256.Sum256(append(text, mark...))
	return sum[:digestSize]
}

// walletCursor decodes req's page token of kind for the wallet of scope
// sc: read takes the cursor's fields, then the range's end (a mark's
// block, set in req) and the digest of the range, which must be req's.
func walletCursor(codec tokenCodec, kind byte, sc []byte, req *bookRequest, read func(*reader)) error {
	cur, err := codec.decode(kind, sc, req.token)
	if err != nil {
		return badToken()
	}
	rd := reader{b: cur}
	read(&rd)
	end := rd.uvarint()
	if rd.err != nil || len(rd.b) != digestSize {
		return badToken()
	}
	if req.endMark != "" {
		req.r.ToBlock = end
	}
	if !bytes.Equal(rd.b, walletDigest(req.r, req.endMark)) {
		return errOtherParams
	}
	return nil
}

// walletBalanceChanges is GET /v1/chains/{chain}/wallets/{wallet}/balance_changes:
// the wallet's statement, newest first (order_by=block_number: oldest
// first), in a block and time range, paged: per block, its used
// addresses' rows summed, each transaction's causes netted across the
// wallet, so that change between its own addresses is internal and moves
// nothing but the fee.
func (s *Server) walletBalanceChanges(w http.ResponseWriter, r *http.Request, a query.Account) error {
	wl, addrs, req, err := s.walletBooks(r, a, true, false)
	if err != nil {
		return err
	}
	codec, err := s.tokens(r.Context())
	if err != nil {
		return err
	}
	sc := scope(a.ID, wl.Chain, "wallet", wl.ID)
	var after *uint64
	if req.token != "" {
		var block uint64
		if err := walletCursor(codec, kindWalletChanges, sc, &req, func(rd *reader) { block = rd.uvarint() }); err != nil {
			return err
		}
		after = &block
	}
	rows, times, err := s.walletRows(r.Context(), a, wl, addrs)
	if err != nil {
		return err
	}
	out := walletChangesBody{BalanceChanges: []walletChange{}}
	var next string
	for k := range rows {
		i := len(rows) - 1 - k
		if req.r.Ascending {
			i = k
		}
		c := rows[i]
		if !inWalletRange(req.r, c.BlockNumber, times[i]) {
			continue
		}
		if after != nil && (req.r.Ascending && c.BlockNumber <= *after || !req.r.Ascending && c.BlockNumber >= *after) {
			continue
		}
		if len(out.BalanceChanges) == req.size {
			last := out.BalanceChanges[len(out.BalanceChanges)-1].BlockNumber
			cur := appendUvarint(appendUvarint(nil, last), req.r.ToBlock)
			next = codec.encode(kindWalletChanges, sc, append(cur, walletDigest(req.r, req.endMark)...))
			break
		}
		out.BalanceChanges = append(out.BalanceChanges, c)
	}
	out.NextPageToken = next
	if req.endMark != "" {
		w.Header().Set(headerEndBlock, strconv.FormatUint(req.r.ToBlock, 10))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// walletExportColumns are the columns of a wallet's statement as CSV.
var walletExportColumns = []string{"chain", "wallet", "block_number", "time", "asset", "symbol", "decimals", "amount", "amount_decimal",
	"balance_after", "balance_after_decimal", "fee", "transaction_hashes", "internal_transaction_hashes", "reconciled", "difference"}

// exportWalletChanges is GET /v1/chains/{chain}/wallets/{wallet}/balance_changes:export:
// the wallet's statement in a range as one CSV file, oldest first unless
// order_by says otherwise, the range ended at the newest stored block.
func (s *Server) exportWalletChanges(w http.ResponseWriter, r *http.Request, a query.Account) error {
	wl, addrs, req, err := s.walletBooks(r, a, false, false)
	if err != nil {
		return err
	}
	if _, ok := r.URL.Query()["order_by"]; !ok {
		req.r.Ascending = true
	}
	head, _, err := s.store.Head(r.Context(), wl.Chain)
	if err != nil {
		return err
	}
	if !req.r.HasToBlock || req.r.ToBlock > head.Number {
		req.r.ToBlock, req.r.HasToBlock = head.Number, true
	}
	rows, times, err := s.walletRows(r.Context(), a, wl, addrs)
	if err != nil {
		return err
	}
	l, err := s.walletCoin(r.Context(), a, wl, addrs)
	if err != nil {
		return err
	}
	h := w.Header()
	if req.endMark != "" {
		h.Set(headerEndBlock, strconv.FormatUint(req.r.ToBlock, 10))
	}
	h.Set("Content-Type", "text/csv; charset=utf-8; header=present")
	h.Set("Content-Disposition", `attachment; filename="`+wl.Chain+"-"+wl.ID+`-statement.csv"`)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Addrd-Export-Rows", strconv.Itoa(countWalletRange(req.r, rows, times)))
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(strings.Join(walletExportColumns, ",") + "\n")
	b := make([]byte, 0, 512)
	for k := range rows {
		i := k
		if !req.r.Ascending {
			i = len(rows) - 1 - k
		}
		if !inWalletRange(req.r, rows[i].BlockNumber, times[i]) {
			continue
		}
		b = appendWalletRecord(b[:0], wl, &rows[i], times[i], l)
		if _, err := bw.Write(b); err != nil {
			return nil // the client left
		}
	}
	bw.Flush()
	return nil
}

// countWalletRange counts the rows in r's range.
func countWalletRange(r query.Range, rows []walletChange, times []time.Time) int {
	n := 0
	for i := range rows {
		if inWalletRange(r, rows[i].BlockNumber, times[i]) {
			n++
		}
	}
	return n
}

// walletCoin is the label of the wallet's chain's coin, as its used
// addresses' balances carry it.
func (s *Server) walletCoin(ctx context.Context, a query.Account, wl query.Wallet, addrs []query.WalletAddress) (query.Label, error) {
	for _, x := range addrs {
		if !x.Used {
			continue
		}
		bs, err := s.store.AccountBalances(ctx, a.ID, wl.Chain, x.Address)
		if errors.Is(err, query.ErrNotSubscribed) {
			continue
		}
		if err != nil {
			return query.Label{}, err
		}
		for _, b := range bs {
			if b.Asset == query.AssetNative {
				return query.Label{Asset: query.AssetNative, Symbol: b.Symbol, Decimals: b.Decimals}, nil
			}
		}
	}
	return query.Label{Asset: query.AssetNative}, nil
}

// appendWalletRecord appends the CSV record of wallet row c (of time t),
// in the order of walletExportColumns.
func appendWalletRecord(b []byte, wl query.Wallet, c *walletChange, t time.Time, l query.Label) []byte {
	b = appendCSVField(b, wl.Chain)
	b = append(b, ',')
	b = append(b, wl.ID...)
	b = append(b, ',')
	b = strconv.AppendUint(b, c.BlockNumber, 10)
	b = append(b, ',')
	if !t.IsZero() {
		b = t.UTC().AppendFormat(b, time.RFC3339)
	}
	b = append(b, ',')
	b = append(b, l.Asset...)
	b = append(b, ',')
	b = appendAmounts(b, l, c.Amount, c.BalanceAfter)
	var fee query.Amount
	for _, tx := range c.Transactions {
		fee = fee.Add(tx.Fee)
	}
	b = append(b, fee.String()...)
	for _, internal := range []bool{false, true} {
		b = append(b, ',')
		first := true
		for _, tx := range c.Transactions {
			if tx.Internal != internal {
				continue
			}
			if !first {
				b = append(b, ' ')
			}
			first = false
			b = append(b, tx.TxHash...)
		}
	}
	b = append(b, ',')
	if c.Reconciled != nil {
		b = strconv.AppendBool(b, *c.Reconciled)
	}
	b = append(b, ',')
	b = append(b, c.Difference.String()...)
	return append(b, '\n')
}

// walletTransactionRange is GET …/wallets/{wallet}/transactions with a
// range, an order or the filters of an address's list: each used
// address's transactions in the range, merged in the order asked, each
// once. A page stops where the first address whose read was cut (by
// its page or the filtered read's budget) stopped, so that nothing is
// skipped; its token carries the cursor, the range and the mark's block.
func (s *Server) walletTransactionRange(w http.ResponseWriter, r *http.Request, a query.Account) error {
	wl, addrs, req, err := s.walletBooks(r, a, true, true)
	if err != nil {
		return err
	}
	codec, err := s.tokens(r.Context())
	if err != nil {
		return err
	}
	sc := scope(a.ID, wl.Chain, "wallet", wl.ID)
	var after *query.TxCursor
	if req.token != "" {
		var c query.TxCursor
		read := func(rd *reader) { c = query.TxCursor{BlockNumber: rd.uvarint(), Index: uint(rd.uvarint())} }
		if err := walletCursor(codec, kindWalletTransactions, sc, &req, read); err != nil {
			return err
		}
		after = &c
	}
	before := func(x, y query.TxCursor) int { // x before y in the page's order
		c := cmp.Or(cmp.Compare(x.BlockNumber, y.BlockNumber), cmp.Compare(x.Index, y.Index))
		if req.r.Ascending {
			return c
		}
		return -c
	}
	mine := map[string]bool{}
	byKey := map[query.TxCursor]query.Transaction{}
	var frontier *query.TxCursor // where the first cut read stopped
	for _, x := range addrs {
		mine[x.Address] = true
		if !x.Used {
			continue
		}
		_, page, err := s.store.SubscriptionTxRange(r.Context(), a.ID, wl.Chain, x.Address, req.r, after, req.size+1, budgetRows)
		if errors.Is(err, query.ErrNotSubscribed) {
			continue // unsubscribed by hand
		}
		if err != nil {
			return err
		}
		for _, t := range page.Txs {
			byKey[query.TxCursor{BlockNumber: t.BlockNumber, Index: t.Index}] = t
		}
		if page.Next != nil || len(page.Txs) > req.size {
			var stop query.TxCursor
			if n := len(page.Txs); n > 0 {
				stop = query.TxCursor{BlockNumber: page.Txs[n-1].BlockNumber, Index: page.Txs[n-1].Index}
			} else {
				stop = *page.Next
			}
			if frontier == nil || before(stop, *frontier) < 0 {
				frontier = &stop
			}
		}
	}
	keys := make([]query.TxCursor, 0, len(byKey))
	for k := range byKey {
		if frontier == nil || before(k, *frontier) <= 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, before)
	var last *query.TxCursor
	switch {
	case len(keys) > req.size:
		keys = keys[:req.size]
		last = &keys[req.size-1]
	case frontier != nil && len(keys) > 0:
		last = &keys[len(keys)-1]
	case frontier != nil:
		last = frontier
	}
	var next string
	if last != nil {
		cur := appendUvarint(appendUvarint(appendUvarint(nil, last.BlockNumber), uint64(last.Index)), req.r.ToBlock)
		next = codec.encode(kindWalletTransactions, sc, append(cur, walletDigest(req.r, req.endMark)...))
	}
	if req.endMark != "" {
		w.Header().Set(headerEndBlock, strconv.FormatUint(req.r.ToBlock, 10))
	}
	return s.writeWalletTxs(w, r, a, wl, addrs, mine, keys, byKey, next)
}

// walletBalancesAt is GET …/wallets/{wallet}/balances?block_number=N or
// ?time=T: the wallet's balance of its chain's coin as its statement
// tells it after block N (finalized or safe: the chain's mark), or after
// the last block of its statement at or before T, without a call to the
// node; split into spendable and immature on a chain some of whose
// outputs mature.
func (s *Server) walletBalancesAt(w http.ResponseWriter, r *http.Request, a query.Account) error {
	chainName, id, ws, _, err := s.chainWallet(r)
	if err != nil {
		return err
	}
	o, err := s.parseAsOf(r, chainName)
	if err != nil {
		return err
	}
	block, at, hasBlock := o.block, o.at, o.hasBlock
	wl, addrs, err := ws.Wallet(r.Context(), a.ID, chainName, id)
	if errors.Is(err, query.ErrNotFound) {
		return errorf(codeNotFound, "the requester has no wallet %s on %s", quote(id), chainName)
	}
	if err != nil {
		return err
	}
	head, _, err := s.store.Head(r.Context(), chainName)
	if err != nil {
		return err
	}
	if err := o.known(head); err != nil {
		return err
	}
	rows, times, err := s.walletRows(r.Context(), a, wl, addrs)
	if err != nil {
		return err
	}
	l, err := s.walletCoin(r.Context(), a, wl, addrs)
	if err != nil {
		return err
	}
	b := balance{Asset: query.AssetNative, Symbol: l.Symbol, Decimals: l.Decimals, BlockNumber: block}
	for i, c := range rows {
		if hasBlock && c.BlockNumber > block || !hasBlock && times[i].After(at) {
			break
		}
		b.Amount, b.UpdateTime = c.BalanceAfter, ptr(c.Time)
		if !hasBlock {
			b.BlockNumber = c.BlockNumber
		}
	}
	if m, ok := s.syntax[chainName].(chain.Maturing); ok {
		var immature query.Amount
		for _, x := range addrs {
			if !x.Used {
				continue
			}
			v, err := s.immature(r.Context(), a, chainName, x.Address, b.BlockNumber, m.Maturity())
			if err != nil {
				return err
			}
			immature = immature.Add(v)
		}
		b.split(&immature)
	}
	writeJSON(w, http.StatusOK, walletBalanceBody{Balances: []balance{b}})
	return nil
}
