package api

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/wharfhq/wharf/query"
)

// balanceChange is a row of an address's statement as the API writes it.
type balanceChange struct {
	BlockNumber  uint64  `json:"block_number"`
	Time         string  `json:"time"`
	Contract     string  `json:"contract"`
	Amount       string  `json:"amount"`
	BalanceAfter string  `json:"balance_after"`
	Causes       []cause `json:"causes"`
	Reconciled   bool    `json:"reconciled"`
	Difference   string  `json:"difference"`
	Traced       bool    `json:"traced"`
}

// cause is one movement behind a balance change.
type cause struct {
	Kind   string `json:"kind"`
	TxHash string `json:"transaction_hash"`
	Amount string `json:"amount"`
}

// balanceChangePage is a page of an address's statement.
type balanceChangePage struct {
	BalanceChanges []balanceChange `json:"balance_changes"`
	NextPageToken  string          `json:"next_page_token"`
}

func toBalanceChange(c query.BalanceChange) balanceChange {
	out := balanceChange{BlockNumber: c.Block, Time: timestamp(c.Time), Contract: c.Contract, Amount: c.Amount,
		BalanceAfter: c.BalanceAfter, Causes: make([]cause, len(c.Causes)), Reconciled: c.Reconciled,
		Difference: c.Difference, Traced: c.Traced}
	if out.Difference == "" {
		out.Difference = "0"
	}
	for i, cs := range c.Causes {
		out.Causes[i] = cause{Kind: cs.Kind, TxHash: cs.TxHash, Amount: cs.Amount}
	}
	return out
}

// balanceChanges is GET /v1/chains/{chain}/addresses/{address}/balance_changes:
// the statement, newest first, paged like transactions.
func (s *Server) balanceChanges(w http.ResponseWriter, r *http.Request, a query.Account) error {
	chain, address, err := s.chainAddress(r)
	if err != nil {
		return err
	}
	size, tok, err := pageParams(r, defaultTxSize, maxTxSize)
	if err != nil {
		return err
	}
	codec, err := s.tokens(r.Context())
	if err != nil {
		return err
	}
	sc := scope(a.ID, chain, address)
	var after *query.ChangeCursor
	if tok != "" {
		cur, derr := codec.decode(kindChanges, sc, tok)
		if derr == nil {
			rd := reader{b: cur}
			after = &query.ChangeCursor{Block: rd.uvarint(), Contract: rd.string()}
			derr = rd.done()
		}
		if derr != nil {
			// Not subscribed comes first, as for a page without a token.
			ok, serr := s.store.Subscribed(r.Context(), a.ID, chain, address)
			if serr != nil {
				return serr
			}
			if !ok {
				return notSubscribed(address)
			}
			return badToken()
		}
	}
	rows, err := s.store.AccountBalanceChanges(r.Context(), a.ID, chain, address, after, size+1)
	if errors.Is(err, query.ErrNotSubscribed) {
		return notSubscribed(address)
	}
	if err != nil {
		return err
	}
	body := balanceChangePage{BalanceChanges: make([]balanceChange, 0, min(len(rows), size))}
	if len(rows) > size {
		rows = rows[:size]
		last := rows[len(rows)-1]
		body.NextPageToken = codec.encode(kindChanges, sc, appendString(appendUvarint(nil, last.Block), last.Contract))
	}
	for _, c := range rows {
		body.BalanceChanges = append(body.BalanceChanges, toBalanceChange(c))
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// headCache keeps the stored head of each chain for a second, so that
// the confirmations of a page cost no read of their own.
type headCache struct {
	mu sync.Mutex
	m  map[string]cachedHead
}

type cachedHead struct {
	number uint64
	read   time.Time
}

// headTTL is how long a chain's stored head is reused: a block's
// confirmations may lag the fetcher by that much.
const headTTL = time.Second

// head returns the number of the newest stored block of chain (0 when
// none is).
func (s *Server) head(ctx context.Context, chain string) (uint64, error) {
	now := s.now()
	s.heads.mu.Lock()
	h, ok := s.heads.m[chain]
	s.heads.mu.Unlock()
	if ok && now.Sub(h.read) < headTTL && !now.Before(h.read) {
		return h.number, nil
	}
	b, found, err := s.store.Head(ctx, chain)
	if err != nil {
		return 0, err
	}
	if !found {
		b.Number = 0
	}
	s.heads.mu.Lock()
	if s.heads.m == nil {
		s.heads.m = make(map[string]cachedHead)
	}
	s.heads.m[chain] = cachedHead{number: b.Number, read: now}
	s.heads.mu.Unlock()
	return b.Number, nil
}
