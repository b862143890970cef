package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/wharfhq/wharf/query"
)

// subscriptionBody is the subscription resource: the answer of PUT and
// GET /v1/chains/{chain}/addresses/{address}.
type subscriptionBody struct {
	Name              string           `json:"name"`
	State             string           `json:"state"`
	HistoryStartBlock *uint64          `json:"history_start_block"`
	SyncProblem       *syncProblemBody `json:"sync_problem"`
}

// syncProblemBody says why a SYNCING subscription is not being synced.
type syncProblemBody struct {
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
}

// toSubscription is sub's resource; a SYNCING one says what holds it
// up, when the chain's health knows.
func (s *Server) toSubscription(ctx context.Context, sub query.Subscription) subscriptionBody {
	b := subscriptionBody{Name: sub.Name(), State: sub.State}
	if sub.Covered {
		b.HistoryStartBlock = &sub.HistoryStart
	}
	if sub.State == query.StateSyncing && s.health != nil {
		states, err := s.health.ChainHealth(ctx)
		if err != nil {
			// The subscription is still answered; only the reason is missing.
			s.log.WarnContext(ctx, "subscription: the chain's health", "err", err)
			return b
		}
		if c := states[sub.Chain]; c.SyncProblem != "" {
			b.SyncProblem = &syncProblemBody{Reason: c.SyncProblem, Since: c.SyncProblemSince.UTC()}
		}
	}
	return b
}

// addressPage is a page of an address list.
type addressPage struct {
	Addresses     []string `json:"addresses"`
	NextPageToken string   `json:"next_page_token"`
	TotalSize     int      `json:"total_size"`
}

// chainAddress reads and validates the {chain} and {address} of a path.
func (s *Server) chainAddress(r *http.Request) (chain, address string, err error) {
	if chain, err = s.chain(r); err != nil {
		return "", "", err
	}
	address, err = s.parseAddress(chain, r.PathValue("address"))
	return chain, address, err
}

// chain reads and validates the {chain} of a path.
func (s *Server) chain(r *http.Request) (string, error) {
	c := r.PathValue("chain")
	if !slices.Contains(s.chains, c) {
		return "", errorf(codeInvalidArgument, "unknown chain %s; this server serves %v", quote(c), s.chains)
	}
	return c, nil
}

// subscribe is PUT /v1/chains/{chain}/addresses/{address}: idempotent.
func (s *Server) subscribe(w http.ResponseWriter, r *http.Request, a query.Account) error {
	chain, address, err := s.chainAddress(r)
	if err != nil {
		return err
	}
	if err := noParams(r); err != nil {
		return err
	}
	req, err := readAddressRequest(r)
	if err != nil {
		return err
	}
	start, err := s.startBlock(chain, req.StartBlock)
	if err != nil {
		return err
	}
	if start != nil {
		_, err = s.store.SubscribeFrom(r.Context(), a.ID, chain, address, *start)
	} else {
		_, err = s.store.Subscribe(r.Context(), a.ID, chain, address)
	}
	if err != nil {
		return err
	}
	sub, err := s.store.Subscription(r.Context(), a.ID, chain, address)
	if errors.Is(err, query.ErrNotSubscribed) {
		// A concurrent DELETE came between: the PUT happened first, and
		// its subscription had not synced yet.
		sub, err = query.Subscription{Chain: chain, Address: address, State: query.StateSyncing}, nil
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.toSubscription(r.Context(), sub))
	return nil
}

// getSubscription is GET /v1/chains/{chain}/addresses/{address}: the
// subscription's state and covered range; 404 when not subscribed.
func (s *Server) getSubscription(w http.ResponseWriter, r *http.Request, a query.Account) error {
	chain, address, err := s.chainAddress(r)
	if err != nil {
		return err
	}
	if err := noParams(r); err != nil {
		return err
	}
	sub, err := s.store.Subscription(r.Context(), a.ID, chain, address)
	if errors.Is(err, query.ErrNotSubscribed) {
		return errorf(codeNotFound, "requester is not subscribed for address '%s'", address)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.toSubscription(r.Context(), sub))
	return nil
}

// Headers of the reads of an address's data: its subscription's state
// and covered range, so that a read during SYNCING says what it answers
// (what is stored so far) without another request. The store reads them
// in the same statement as the data (Store.SubscriptionBalances and its
// siblings): no read of its own.
const (
	headerState        = "Addrd-Subscription-State"
	headerHistoryStart = "Addrd-History-Start-Block"
)

// setState sets the headers of sub's state on a read of its address.
func setState(w http.ResponseWriter, sub query.Subscription) {
	h := w.Header()
	h.Set(headerState, sub.State)
	if sub.Covered {
		h.Set(headerHistoryStart, strconv.FormatUint(sub.HistoryStart, 10))
	}
}

// unsubscribe is DELETE /v1/chains/{chain}/addresses/{address}.
func (s *Server) unsubscribe(w http.ResponseWriter, r *http.Request, a query.Account) error {
	chain, address, err := s.chainAddress(r)
	if err != nil {
		return err
	}
	if err := noParams(r); err != nil {
		return err
	}
	err = s.store.Unsubscribe(r.Context(), a.ID, chain, address)
	if errors.Is(err, query.ErrNotFound) {
		return errorf(codeNotFound, "requester is not subscribed for address '%s'", address)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct{}{})
	return nil
}

// listAll is GET /v1/addresses.
func (s *Server) listAll(w http.ResponseWriter, r *http.Request, a query.Account) error {
	return s.list(w, r, a, "")
}

// listChain is GET /v1/chains/{chain}/addresses.
func (s *Server) listChain(w http.ResponseWriter, r *http.Request, a query.Account) error {
	chain, err := s.chain(r)
	if err != nil {
		return err
	}
	return s.list(w, r, a, chain)
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, a query.Account, chain string) error {
	size, tok, err := pageParams(r, defaultListSize, maxListSize)
	if err != nil {
		return err
	}
	codec, err := s.tokens(r.Context())
	if err != nil {
		return err
	}
	sc := scope(a.ID, chain)
	var after *query.SubscriptionCursor
	if tok != "" {
		cur, err := codec.decode(kindSubscriptions, sc, tok)
		if err != nil {
			return badToken()
		}
		rd := reader{b: cur}
		after = &query.SubscriptionCursor{Chain: rd.string(), Address: rd.string()}
		if rd.done() != nil {
			return badToken()
		}
	}
	subs, total, err := s.store.Subscriptions(r.Context(), a.ID, chain, after, size+1)
	if err != nil {
		return err
	}
	page := addressPage{Addresses: make([]string, 0, min(len(subs), size)), TotalSize: total}
	if len(subs) > size {
		subs = subs[:size]
		last := subs[len(subs)-1]
		page.NextPageToken = codec.encode(kindSubscriptions, sc, appendString(appendString(nil, last.Chain), last.Address))
	}
	for _, sub := range subs {
		page.Addresses = append(page.Addresses, sub.Name())
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

func badToken() error {
	return errorf(codeInvalidArgument, "invalid page_token: pass the next_page_token of the previous page of the same list, unchanged")
}

// noParams refuses any query parameter.
func noParams(r *http.Request) error {
	q, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	for k := range q {
		return errorf(codeInvalidArgument, "unknown query parameter %s", quote(k))
	}
	return nil
}

// pageParams reads page_size and page_token and refuses anything else.
// page_size: absent or 0 is def, above max is max, anything but a
// non-negative decimal integer is an error.
func pageParams(r *http.Request, def, max int) (size int, token string, err error) {
	q, perr := parseQuery(r.URL.RawQuery)
	if perr != nil {
		return 0, "", perr
	}
	size = def
	for k, v := range q {
		if len(v) > 1 {
			return 0, "", errorf(codeInvalidArgument, "query parameter %s given %d times", quote(k), len(v))
		}
		switch k {
		case "page_size":
			n, err := strconv.ParseUint(v[0], 10, 64)
			switch {
			case errors.Is(err, strconv.ErrRange):
				size = max
			case err != nil:
				return 0, "", errorf(codeInvalidArgument, "page_size must be a non-negative integer, not %s", quote(v[0]))
			case n == 0:
				size = def
			case n > uint64(max):
				size = max
			default:
				size = int(n)
			}
		case "page_token":
			token = v[0]
		default:
			return 0, "", errorf(codeInvalidArgument, "unknown query parameter %s (this list takes page_size and page_token)", quote(k))
		}
	}
	return size, token, nil
}
