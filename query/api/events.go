package api

// The event feed: GET /v1/events (docs/events.md).

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/events"
)

// Sizes of a feed page, and the longest wait of a long poll.
const (
	defaultEventSize = 100
	maxEventSize     = 1000
	maxEventWait     = 20 * time.Second // under addrd serve's 30 s write timeout
)

// eventPage is a page of the feed, as written by hand (events.AppendJSON).
type eventPage struct {
	Events     []eventBody `json:"events"`
	NextCursor string      `json:"next_cursor"`
}

// eventBody is an event as the feed lists it and a webhook sends it.
type eventBody struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Timestamp string          `json:"timestamp"`
	Cursor    string          `json:"cursor"`
	Data      json.RawMessage `json:"data"`
	// Wallet, on an event of an address one of the requester's
	// descriptor wallets derived, names it.
	Wallet *eventWallet `json:"wallet,omitempty"`
}

// eventWallet is the wallet of an event's address.
type eventWallet struct {
	Name string `json:"name"`
	// Internal is true for an address of a change branch.
	Internal bool `json:"internal"`
}

// eventRead is a read of the feed: where from, how many, what, and how
// long to wait for the first event.
type eventRead struct {
	after  int64 // -1: from the oldest retained
	size   int
	filter query.EventFilter
	wait   time.Duration
}

// eventParams reads the query of GET /v1/events.
func (s *Server) eventParams(r *http.Request, a query.Account) (eventRead, error) {
	q, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		return eventRead{}, err
	}
	p := eventRead{after: -1, size: defaultEventSize}
	var chainParam string
	var wallet walletFilter
	for k, v := range q {
		if len(v) > 1 {
			return eventRead{}, errorf(codeInvalidArgument, "query parameter %s given %d times", quote(k), len(v))
		}
		switch k {
		case "after":
			if p.after, err = events.ParseCursor(a.ID, v[0]); err != nil {
				return eventRead{}, badCursor(err)
			}
		case "page_size":
			n, err := strconv.ParseUint(v[0], 10, 64)
			switch {
			case errors.Is(err, strconv.ErrRange), err == nil && n > maxEventSize:
				p.size = maxEventSize
			case err != nil:
				return eventRead{}, errorf(codeInvalidArgument, "page_size must be a non-negative integer, not %s", quote(v[0]))
			case n > 0:
				p.size = int(n)
			}
		case "wait_seconds":
			n, err := strconv.ParseUint(v[0], 10, 8)
			if err != nil || time.Duration(n)*time.Second > maxEventWait {
				return eventRead{}, errorf(codeInvalidArgument, "wait_seconds must be an integer from 0 to %d, not %s", int(maxEventWait.Seconds()), quote(v[0]))
			}
			p.wait = time.Duration(n) * time.Second
		case "chain":
			if !slices.Contains(s.chains, v[0]) {
				return eventRead{}, errorf(codeInvalidArgument, "unknown chain %s; this server serves %v", quote(v[0]), s.chains)
			}
			chainParam = v[0]
		case "address":
			if p.filter.Address, err = s.parseAddress("", v[0]); err != nil {
				return eventRead{}, err
			}
		case "wallet":
			if wallet, err = s.parseWalletName(v[0]); err != nil {
				return eventRead{}, err
			}
		case "kind":
			for kind := range strings.SplitSeq(v[0], ",") {
				if !slices.Contains(query.EventKinds, kind) {
					return eventRead{}, errorf(codeInvalidArgument, "unknown event kind %s; kinds are %s", quote(kind), strings.Join(query.EventKinds, ", "))
				}
				if !slices.Contains(p.filter.Kinds, kind) {
					p.filter.Kinds = append(p.filter.Kinds, kind)
				}
			}
		case "start_block", "end_block":
			n, err := strconv.ParseUint(v[0], 10, 63)
			if err != nil {
				return eventRead{}, errorf(codeInvalidArgument, "%s must be a block number (a non-negative decimal integer), not %s", k, quote(v[0]))
			}
			if k == "start_block" {
				p.filter.FromBlock = n
			} else {
				p.filter.ToBlock, p.filter.HasToBlock = n, true
			}
		default:
			return eventRead{}, errorf(codeInvalidArgument,
				"unknown query parameter %s (this list takes after, page_size, wait_seconds, chain, address, wallet, kind, start_block and end_block)", quote(k))
		}
	}
	if p.filter.Chain, err = walletChain(chainParam, wallet); err != nil {
		return eventRead{}, err
	}
	p.filter.Wallet = wallet.id
	if p.filter.HasToBlock && p.filter.FromBlock > p.filter.ToBlock {
		return eventRead{}, errorf(codeInvalidArgument, "start_block %d is after end_block %d: the range is reversed", p.filter.FromBlock, p.filter.ToBlock)
	}
	return p, nil
}

// badCursor is the error of an after that is not a cursor of the
// requester's feed.
func badCursor(err error) error {
	if errors.Is(err, events.ErrOtherCursor) {
		return errorf(codeInvalidArgument, "invalid after: the cursor is another requester's; pass a next_cursor of your own feed")
	}
	return errorf(codeInvalidArgument, "invalid after: pass a next_cursor (or an event's cursor) of your feed, unchanged")
}

// errPruned is the error of a cursor older than the retained events.
var errPruned = errorf(codeOutOfRange,
	"the events after this cursor are past the server's retention; read from the oldest retained (no after) and reconcile with the statement")

// eventsPage is GET /v1/events: the requester's feed after a cursor, in
// order; with wait_seconds, an empty page waits that long for an event.
func (s *Server) events(w http.ResponseWriter, r *http.Request, a query.Account) error {
	if s.feed == nil {
		return errorf(codeUnimplemented, "this server keeps no event feed")
	}
	p, err := s.eventParams(r, a)
	if err != nil {
		return err
	}
	ctx := r.Context()
	page, err := s.feed.AccountEvents(ctx, a.ID, p.after, p.filter, p.size)
	if p.wait > 0 && err == nil && len(page.Events) == 0 {
		page, err = s.waitEvents(r, a, p, page)
	}
	if errors.Is(err, query.ErrEventsPruned) {
		return errPruned
	}
	if err != nil {
		return err
	}
	buf := s.bufs.get()
	defer s.bufs.put(buf)
	b := append((*buf)[:0], `{"events":[`...)
	for i, e := range page.Events {
		if i > 0 {
			b = append(b, ',')
		}
		b = events.AppendJSON(b, a.ID, e)
	}
	b = append(b, `],"next_cursor":"`...)
	b = append(b, events.Cursor(a.ID, page.Through)...)
	b = append(b, "\"}\n"...)
	*buf = b
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	return nil
}

// waitEvents waits up to p.wait, without holding a store turn, for an
// event the requester sees after page (empty), and reads again.
func (s *Server) waitEvents(r *http.Request, a query.Account, p eventRead, page query.EventPage) (query.EventPage, error) {
	ctx, cancel := context.WithTimeout(r.Context(), p.wait)
	defer cancel()
	for len(page.Events) == 0 {
		through := page.Through
		err := s.outsideTurn(r, func() error { return s.watch.Wait(ctx, through) })
		if err != nil {
			if r.Context().Err() != nil {
				return page, r.Context().Err()
			}
			return page, nil // waited long enough: an empty page
		}
		next, err := s.feed.AccountEvents(r.Context(), a.ID, through, p.filter, p.size)
		if err != nil {
			return page, err
		}
		page = next
	}
	return page, nil
}

// outsideTurn runs wait without the request's store turn, so that
// waiting (or writing) requests leave the database to the others, then
// takes a turn again; what the handler wrote before is written first.
func (s *Server) outsideTurn(r *http.Request, wait func() error) error {
	s.giveTurn(r)
	if hw := info(r).held; hw != nil {
		hw.flush() // what the handler wrote so far goes out now
	}
	werr := wait()
	if err := s.takeTurn(r); err != nil {
		return err
	}
	return werr
}
