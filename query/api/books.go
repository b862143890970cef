package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wharfhq/wharf/query"
)

// The books: an address's transactions and statement in a
// block and time range, oldest or newest first, filtered by kind, asset
// and counterparty; its balances as of a block or a time; the statement
// as CSV (export.go). The parameters are plain query parameters, as
// page_size and page_token are (AIP-158's paging with AIP-132's order_by
// spelling); a page token is bound to the range and filters it was
// minted under.

// budgetRows is how many rows a filtered page reads at most before it
// answers what it found with a next_page_token: a sparse filter over a
// year of a busy address costs a bounded read a request.
const budgetRows = 10_000

// kinds are the movement kinds a kind filter takes.
var kinds = []string{query.KindTransaction, query.KindInternal, query.KindToken, query.KindFee, query.KindMint, query.KindWithdrawal,
	query.KindFeeIncome, query.KindCreation, query.KindSelfdestruct, query.KindBurn, query.KindGenesis,
	query.KindReceived, query.KindSpent, query.KindCoinbase}

// rangeParams are the parameters of the books lists, beside page_size and
// page_token.
var rangeParams = []string{"start_block", "end_block", "start_time", "end_time", "order_by", "kind", "asset", "contract", "token_id", "counterparty"}

// bookRequest is a books list request: its range and filters, whether
// any was given, and its page size and token.
type bookRequest struct {
	r         query.Range
	set       bool
	fromBlock bool // start_block given
	// endMark is end_block's mark, finalized or safe, "" for a number:
	// the range ends at the chain's mark as the fetcher recorded it
	// (endAt), and its page tokens carry that block.
	endMark string
	size    int
	token   string
}

// hasRangeParams reports, without allocating, whether a raw query holds
// any parameter but page_size and page_token: the plain lists keep their
// own (hot) path.
func hasRangeParams(raw string) bool {
	for raw != "" {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		k, _, _ := strings.Cut(kv, "=")
		if k != "" && k != "page_size" && k != "page_token" {
			return true
		}
	}
	return false
}

// pathAddresses reads addresses on the chain of r's path.
func (s *Server) pathAddresses(r *http.Request) func(string) (string, error) {
	name := r.PathValue("chain")
	return func(a string) (string, error) { return s.parseAddress(name, a) }
}

// parseBooks reads a books request's parameters, its addresses with
// parse; paged is false for an export, which takes no page_size or
// page_token.
func parseBooks(r *http.Request, paged bool, parse func(string) (string, error)) (bookRequest, error) {
	q, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		return bookRequest{}, err
	}
	b := bookRequest{size: defaultTxSize}
	var (
		startTime, endTime string
		asset, tokenID     string
	)
	for k, v := range q {
		if len(v) > 1 && k != "kind" {
			return bookRequest{}, errorf(codeInvalidArgument, "query parameter %s given %d times", quote(k), len(v))
		}
		val := v[0]
		switch k {
		case "page_size", "page_token":
			if !paged {
				return bookRequest{}, errorf(codeInvalidArgument, "an export is not paged: it takes no %s", k)
			}
			if k == "page_token" {
				b.token = val
				continue
			}
			n, err := strconv.ParseUint(val, 10, 64)
			switch {
			case errors.Is(err, strconv.ErrRange):
				b.size = maxTxSize
			case err != nil:
				return bookRequest{}, errorf(codeInvalidArgument, "page_size must be a non-negative integer, not %s", quote(val))
			case n == 0:
				b.size = defaultTxSize
			default:
				b.size = int(min(n, maxTxSize))
			}
			continue
		case "start_block", "end_block":
			if k == "end_block" && (val == query.FinalityFinalized || val == query.FinalitySafe) {
				b.endMark, b.r.HasToBlock = val, true
				break
			}
			n, err := strconv.ParseUint(val, 10, 63)
			if err != nil {
				if k == "end_block" {
					return bookRequest{}, errorf(codeInvalidArgument, "end_block must be a block number (a non-negative decimal integer), finalized or safe, not %s", quote(val))
				}
				return bookRequest{}, errorf(codeInvalidArgument, "%s must be a block number (a non-negative decimal integer), not %s", k, quote(val))
			}
			if k == "start_block" {
				b.r.FromBlock, b.fromBlock = n, true
			} else {
				b.r.ToBlock, b.r.HasToBlock = n, true
			}
		case "start_time", "end_time":
			t, err := parseTime(k, val)
			if err != nil {
				return bookRequest{}, err
			}
			if k == "start_time" {
				b.r.FromTime, startTime = t, val
			} else {
				b.r.ToTime, endTime = t, val
			}
		case "order_by":
			switch strings.Join(strings.Fields(val), " ") {
			case "block_number desc":
			case "block_number", "block_number asc":
				b.r.Ascending = true
			default:
				return bookRequest{}, errorf(codeInvalidArgument, "order_by must be %s (oldest first) or %s (newest first, the default), not %s",
					quote("block_number"), quote("block_number desc"), quote(val))
			}
		case "kind":
			for _, s := range v {
				for k := range strings.SplitSeq(s, ",") {
					if !slices.Contains(kinds, k) {
						return bookRequest{}, errorf(codeInvalidArgument, "unknown kind %s; kinds are %s", quote(k), strings.Join(kinds, ", "))
					}
					if !slices.Contains(b.r.Kinds, k) {
						b.r.Kinds = append(b.r.Kinds, k)
					}
				}
			}
			slices.Sort(b.r.Kinds)
		case "asset":
			asset = val
		case "contract":
			c, err := parse(val)
			if err != nil {
				return bookRequest{}, errorf(codeInvalidArgument, "contract: %s", err.(*Error).Message)
			}
			b.r.Contract, b.r.HasContract = c, true
		case "token_id":
			// One ERC-1155 holding of contract=: the id in decimal, as
			// transfers and statement rows write it.
			id, err := query.ParseAmount(val)
			if err != nil || id.Sign() < 0 || len(val) > 78 {
				return bookRequest{}, errorf(codeInvalidArgument, "token_id must be a token id in decimal (0 to 2^256-1, no leading zeros), not %s", quote(val))
			}
			tokenID = id.String()
		case "counterparty":
			c, err := parse(val)
			if err != nil {
				return bookRequest{}, errorf(codeInvalidArgument, "counterparty: %s", err.(*Error).Message)
			}
			b.r.Counterparty = c
		default:
			list := "page_size, page_token, "
			if !paged {
				list = ""
			}
			return bookRequest{}, errorf(codeInvalidArgument, "unknown query parameter %s (this list takes %s%s)", quote(k), list, strings.Join(rangeParams, ", "))
		}
		b.set = true
	}
	if tokenID != "" {
		if !b.r.HasContract {
			return bookRequest{}, errorf(codeInvalidArgument, "token_id names an ERC-1155 holding of a contract: give contract=0x… with it")
		}
		b.r.Contract = query.HoldingKey(query.AssetERC1155, b.r.Contract, tokenID)
	}
	switch asset {
	case "":
	case query.AssetNative:
		if b.r.HasContract {
			return bookRequest{}, errorf(codeInvalidArgument, "asset=native and contract name two assets; give one")
		}
		b.r.Contract, b.r.HasContract = "", true
	case "token":
		if !b.r.HasContract {
			b.r.TokensOnly = true
		}
	default:
		return bookRequest{}, errorf(codeInvalidArgument, "asset must be native or token (any token), not %s (one token is named by contract=0x…)", quote(asset))
	}
	if b.r.HasToBlock && b.endMark == "" && b.r.FromBlock > b.r.ToBlock {
		return bookRequest{}, errorf(codeInvalidArgument, "start_block %d is after end_block %d: the range is reversed", b.r.FromBlock, b.r.ToBlock)
	}
	if !b.r.FromTime.IsZero() && !b.r.ToTime.IsZero() && !b.r.FromTime.Before(b.r.ToTime) {
		return bookRequest{}, errorf(codeInvalidArgument, "start_time %s is not before end_time %s: the range is reversed or empty (end_time is excluded)", startTime, endTime)
	}
	return b, nil
}

// parseTime reads a time parameter: RFC 3339 with a time zone (Z or an
// offset). A time without one is refused, not guessed: the books of a
// month end at midnight somewhere.
func parseTime(name, v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err == nil {
		return t, nil
	}
	// A date alone is the midnight that starts it in UTC, as an
	// accountant's month end means: end_time=2026-12-01 ends November.
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
		if _, e := time.Parse(layout, v); e == nil {
			return time.Time{}, errorf(codeInvalidArgument, "%s %s has no time zone: write RFC 3339 with Z or an offset, such as 2026-10-01T00:00:00Z", name, quote(v))
		}
	}
	return time.Time{}, errorf(codeInvalidArgument, "%s must be an RFC 3339 time with a time zone, such as 2026-10-01T00:00:00Z, not %s", name, quote(v))
}

// digestSize is the length of the digest of a range and its filters that
// a page token carries after its cursor.
const digestSize = 8

// digest is what binds a page token to the range and filters it was
// minted under: nothing for the plain list (so that its tokens are what
// they were before ranges), else 8 bytes of SHA-256 of their canonical
// text (rangeText). It is inside the token's MAC, so it cannot be
// altered.
func digest(r query.Range) []byte {
	var buf [256]byte
	text := appendRangeText(buf[:0], r)
	if string(text) == emptyRangeText {
		return nil
	}
	sum := sha256.Sum256(text)
	return sum[:digestSize]
}

// emptyRangeText is the canonical text of the plain list's range.
var emptyRangeText = string(appendRangeText(nil, query.Range{}))

// appendRangeText appends the canonical text of r's range and filters:
// fmt's "%d %d %t %d %d %t %q %t %t %q %q" of them, as page tokens hash
// it, written without fmt (which cost a books page two formattings a
// request). A time is its Unix nanoseconds, 0 for none.
func appendRangeText(b []byte, r query.Range) []byte {
	t := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixNano()
	}
	b = strconv.AppendUint(b, r.FromBlock, 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, r.ToBlock, 10)
	b = append(b, ' ')
	b = strconv.AppendBool(b, r.HasToBlock)
	b = append(b, ' ')
	b = strconv.AppendInt(b, t(r.FromTime), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, t(r.ToTime), 10)
	b = append(b, ' ')
	b = strconv.AppendBool(b, r.Ascending)
	b = append(b, ' ')
	b = strconv.AppendQuote(b, r.Contract)
	b = append(b, ' ')
	b = strconv.AppendBool(b, r.HasContract)
	b = append(b, ' ')
	b = strconv.AppendBool(b, r.TokensOnly)
	b = append(b, ' ')
	b = strconv.AppendQuote(b, strings.Join(r.Kinds, ","))
	b = append(b, ' ')
	return strconv.AppendQuote(b, r.Counterparty)
}

// errOtherParams refuses a page token minted under another range or
// other filters than the request's.
var errOtherParams = errorf(codeInvalidArgument, "page_token was minted for other query parameters: "+
	"pass it with the start_block, end_block, start_time, end_time, order_by, kind, asset, contract and counterparty "+
	"of the request that returned it, or leave page_token out to start over")

// readBooksPage is readPage for a books list: the token's cursor is
// followed by the digest of the range and filters, and a token minted
// under others is refused by name. A range that ends at a mark
// (end_block=finalized) ends at the mark's block as of its first page:
// the token carries that block (markDigest), so that every page of the
// list ends where the first did.
func (s *Server) readBooksPage(r *http.Request, a query.Account, kind byte, req *bookRequest, decode func(*reader)) (pagedRead, error) {
	chain, address, err := s.chainAddress(r)
	if err != nil {
		return pagedRead{}, err
	}
	codec, err := s.tokens(r.Context())
	if err != nil {
		return pagedRead{}, err
	}
	p := pagedRead{chain: chain, address: address, size: req.size, kind: kind, codec: codec,
		scope: scope(a.ID, chain, address), digest: digest(req.r)}
	if req.token == "" {
		if req.endMark != "" {
			if err := s.endAt(r.Context(), a, chain, address, req); err != nil {
				return pagedRead{}, err
			}
			p.digest = markDigest(req.r, req.endMark)
		}
		return p, nil
	}
	// A token that does not decode, or decodes to no digest of ours, is
	// malformed (or someone else's): answered below, after the
	// subscription, so that it never tells an unsubscribed address apart.
	if cur, err := codec.decode(kind, p.scope, req.token); err == nil {
		rd := reader{b: cur}
		decode(&rd)
		rest := rd.b
		if end, n := binary.Uvarint(rest); rd.err == nil && req.endMark != "" && n > 0 {
			req.r.ToBlock = end
			p.digest = markDigest(req.r, req.endMark)
		}
		switch {
		case rd.err != nil:
		case bytes.Equal(rest, p.digest):
			if err := req.checkOrder(); err != nil {
				return pagedRead{}, err
			}
			return p, nil
		case isDigest(rest):
			return pagedRead{}, errOtherParams
		}
	}
	ok, serr := s.store.Subscribed(r.Context(), a.ID, chain, address)
	switch {
	case serr != nil:
		return pagedRead{}, serr
	case !ok:
		return pagedRead{}, notSubscribed(address)
	}
	return pagedRead{}, badToken()
}

// isDigest reports whether what follows a token's cursor is one of the
// forms a digest takes: none (the plain list), digestSize bytes, or a
// block and digestSize bytes (a range that ends at a mark).
func isDigest(rest []byte) bool {
	if len(rest) == 0 || len(rest) == digestSize {
		return true
	}
	_, n := binary.Uvarint(rest)
	return n > 0 && len(rest)-n == digestSize
}

// markDigest is what follows the cursor in a page token of a range that
// ends at a mark: the block the range ended at on its first page, then
// the digest of the range's text with the mark's name after it (so that
// end_block=finalized and end_block=N never share a token).
func markDigest(r query.Range, mark string) []byte {
	var buf [256]byte
	text := append(appendRangeText(buf[:0], r), " end_block="...)
	sum := sha256.Sum256(append(text, mark...))
	return append(binary.AppendUvarint(nil, r.ToBlock), sum[:digestSize]...)
}

// headerEndBlock names, on a range given end_block=finalized (or safe),
// the block the range ends at.
const headerEndBlock = "Addrd-End-Block"

// endAt ends req's range at the block its end_block mark names: the
// chain's finalized (safe) block as the fetcher recorded it, read from
// the same tip as the rows' finality, so that every row of the range
// says finalized (at least safe). No mark recorded yet is 400 (to a
// requester subscribed to address; NotSubscribed to any other).
func (s *Server) endAt(ctx context.Context, a query.Account, chain, address string, req *bookRequest) error {
	at, err := s.head(ctx, chain)
	if err != nil {
		return err
	}
	if at.fin.Source == "" {
		ok, err := s.store.Subscribed(ctx, a.ID, chain, address)
		switch {
		case err != nil:
			return err
		case !ok:
			return notSubscribed(address)
		}
		return errorf(codeInvalidArgument, "end_block=%s: no %s block of %s is recorded yet: the fetcher records one once it stores blocks", req.endMark, req.endMark, chain)
	}
	req.r.ToBlock = at.fin.Finalized
	if req.endMark == query.FinalitySafe {
		req.r.ToBlock = at.fin.Safe
	}
	return req.checkOrder()
}

// checkOrder refuses a range whose end_block mark is before its
// start_block.
func (req *bookRequest) checkOrder() error {
	if req.endMark != "" && req.r.FromBlock > req.r.ToBlock {
		return errorf(codeInvalidArgument, "start_block %d is after end_block=%s, block %d: the range is empty until the %s block reaches start_block",
			req.r.FromBlock, req.endMark, req.r.ToBlock, req.endMark)
	}
	return nil
}

// checkCovered refuses a range that reaches before the address's covered
// history: the books would miss what happened there.
func checkCovered(sub query.Subscription, req bookRequest) error {
	bounded := req.fromBlock || req.r.HasToBlock || !req.r.FromTime.IsZero() || !req.r.ToTime.IsZero()
	switch {
	case !bounded:
		return nil
	case !sub.Covered:
		return errorf(codeInvalidArgument, "the history of %s is not covered yet (state %s, no history_start_block): a range can be read once it is", sub.Address, sub.State)
	case req.fromBlock && req.r.FromBlock < sub.HistoryStart:
		return errorf(codeInvalidArgument, "start_block %d is before the covered history of %s, which starts at history_start_block %d",
			req.r.FromBlock, sub.Address, sub.HistoryStart)
	case req.r.HasToBlock && req.r.ToBlock < sub.HistoryStart:
		return errorf(codeInvalidArgument, "end_block %d is before the covered history of %s, which starts at history_start_block %d",
			req.r.ToBlock, sub.Address, sub.HistoryStart)
	}
	return nil
}

// booksList serves a page of a books list of kind, written as the pages
// are (read.go), into a pooled buffer: open, then the rows that read
// appends (the page after the token's cursor, which decode reads),
// then the page's end with the token of the cursor read returns (nil:
// the last page). read returns the subscription, checked for the range.
func (s *Server) booksList(w http.ResponseWriter, r *http.Request, a query.Account, kind byte, open string, decode func(*reader),
	read func(p pagedRead, req bookRequest, b []byte) ([]byte, query.Subscription, []byte, error)) error {
	req, err := parseBooks(r, true, s.pathAddresses(r))
	if err != nil {
		return err
	}
	p, err := s.readBooksPage(r, a, kind, &req, decode)
	if err != nil {
		return err
	}
	buf := s.bufs.get()
	defer s.bufs.put(buf)
	b, sub, cursor, err := read(p, req, append((*buf)[:0], open...))
	*buf = b
	if errors.Is(err, query.ErrNotSubscribed) {
		return notSubscribed(p.address)
	}
	if err != nil {
		return err
	}
	if err := checkCovered(sub, req); err != nil {
		return err
	}
	var next string
	if cursor != nil {
		next = p.next(cursor)
	}
	*buf = append(appendPageEnd(b, next), '\n')
	setState(w, sub)
	if req.endMark != "" {
		w.Header().Set(headerEndBlock, strconv.FormatUint(req.r.ToBlock, 10))
	}
	writePage(w, *buf)
	return nil
}

// changeRange is GET …/balance_changes, plain or with a range and
// filters: the statement, labelled, a row at a time as the store hands
// it over.
func (s *Server) changeRange(w http.ResponseWriter, r *http.Request, a query.Account) error {
	var after *query.ChangeCursor
	return s.booksList(w, r, a, kindChanges, balanceChangePageOpen, func(rd *reader) {
		after = &query.ChangeCursor{Block: rd.uvarint(), Contract: rd.string()}
	}, func(p pagedRead, req bookRequest, b []byte) ([]byte, query.Subscription, []byte, error) {
		at, err := s.head(r.Context(), p.chain)
		if err != nil {
			return b, query.Subscription{}, nil, err
		}
		n := 0
		sub, next, err := s.store.SubscriptionChangeRangeFunc(r.Context(), a.ID, p.chain, p.address, req.r, after, p.size, budgetRows,
			func(c *query.BalanceChange, l query.Label) error {
				b = appendBalanceChangeItem(b, n, c, l, at.fin)
				n++
				return nil
			})
		if err != nil || next == nil {
			return b, sub, nil, err
		}
		return b, sub, appendString(appendUvarint(nil, next.Block), next.Contract), nil
	})
}

// transactionRange is GET …/transactions with a range or filters.
func (s *Server) transactionRange(w http.ResponseWriter, r *http.Request, a query.Account) error {
	var after *query.TxCursor
	return s.booksList(w, r, a, kindTransactions, transactionPageOpen, func(rd *reader) {
		after = &query.TxCursor{BlockNumber: rd.uvarint(), Index: uint(rd.uvarint())}
	}, func(p pagedRead, req bookRequest, b []byte) ([]byte, query.Subscription, []byte, error) {
		sub, page, err := s.store.SubscriptionTxRange(r.Context(), a.ID, p.chain, p.address, req.r, after, p.size, budgetRows)
		if err != nil {
			return b, sub, nil, err
		}
		head, err := s.head(r.Context(), p.chain)
		if err != nil {
			return b, sub, nil, err
		}
		for i := range page.Txs {
			b = appendTransactionItem(b, i, &page.Txs[i], false, p.address, head)
		}
		if page.Next == nil {
			return b, sub, nil, nil
		}
		return b, sub, appendUvarint(appendUvarint(nil, page.Next.BlockNumber), uint64(page.Next.Index)), nil
	})
}

// blockNumber is the block a block_number parameter names: a number, or
// finalized or safe, the chain's mark (docs/fetcher.md, "Finality").
func (s *Server) blockNumber(ctx context.Context, chain, v string) (uint64, error) {
	if v != query.FinalityFinalized && v != query.FinalitySafe {
		n, err := strconv.ParseUint(v, 10, 63)
		if err != nil {
			return 0, errorf(codeInvalidArgument, "block_number must be a block number (a non-negative decimal integer), finalized or safe, not %s", quote(v))
		}
		return n, nil
	}
	fin, err := s.store.Finality(ctx, chain)
	switch {
	case err != nil:
		return 0, err
	case fin.Source == "":
		return 0, errorf(codeInvalidArgument, "no %s block of %s is recorded yet: the fetcher records one once it stores blocks", v, chain)
	case v == query.FinalitySafe:
		return fin.Safe, nil
	}
	return fin.Finalized, nil
}

// balancesAt is GET …/balances?block_number=N or ?time=T: every balance
// of the address as the statement tells it after block N (after the last
// block of the statement at or before T), without a call to the node.
// block_number=finalized (or safe) is the chain's finalized (safe) mark.
func (s *Server) balancesAt(w http.ResponseWriter, r *http.Request, a query.Account, chain, address string) error {
	o, err := s.parseAsOf(r, chain)
	if err != nil {
		return err
	}
	block, at, hasBlock, asked := o.block, o.at, o.hasBlock, o.asked
	sub, bs, head, err := s.store.SubscriptionBalancesAt(r.Context(), a.ID, chain, address, block, at)
	switch {
	case errors.Is(err, query.ErrNotSubscribed):
		return notSubscribed(address)
	case errors.Is(err, query.ErrBeforeStatement):
		if !sub.Covered {
			return errorf(codeInvalidArgument, "the history of %s is not covered yet (state %s, no history_start_block)", address, sub.State)
		}
		return errorf(codeInvalidArgument, "%s is before the statement of %s, which starts at history_start_block %d", asked, address, sub.HistoryStart)
	case err != nil:
		return err
	}
	switch {
	case !sub.Covered:
		return errorf(codeInvalidArgument, "the history of %s is not covered yet (state %s, no history_start_block)", address, sub.State)
	case hasBlock && block < sub.HistoryStart:
		return errorf(codeInvalidArgument, "block_number %d is before the covered history of %s, which starts at history_start_block %d",
			block, address, sub.HistoryStart)
	}
	if err := o.known(head); err != nil {
		return err
	}
	plain := make([]query.Balance, len(bs))
	for i, b := range bs {
		plain[i] = query.Balance{Asset: b.Asset, Block: b.Block}
	}
	immature, err := s.immatureOf(r.Context(), a, chain, address, plain, false)
	if err != nil {
		return err
	}
	setState(w, sub)
	body := balancesBody{Balances: make([]balance, len(bs))}
	for i, b := range bs {
		contract, id := query.SplitHoldingKey(b.Contract)
		body.Balances[i] = balance{Asset: b.Asset, Contract: contract, TokenID: id, Symbol: b.Symbol, Name: b.Name, Decimals: b.Decimals,
			Amount: b.Amount, BlockNumber: b.Block}
		if immature != nil {
			body.Balances[i].split(immature[i])
		}
		if b.RowFound {
			t := timestamp(b.Time)
			body.Balances[i].UpdateTime = &t
		}
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}
