package api

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/rowjson"
)

// balanceChange is a row of an address's statement as the API writes it.
type balanceChange struct {
	BlockNumber  uint64       `json:"block_number"`
	Time         string       `json:"time"`
	Contract     string       `json:"contract"`
	TokenID      string       `json:"token_id"`
	Asset        string       `json:"asset"`
	Symbol       string       `json:"symbol"`
	Decimals     int          `json:"decimals"`
	Amount       query.Amount `json:"amount"`
	BalanceAfter query.Amount `json:"balance_after"`
	Causes       []cause      `json:"causes"`
	Reconciled   *bool        `json:"reconciled"` // nil: not checked
	Difference   query.Amount `json:"difference"`
	Internals    bool         `json:"traced"`
	// Finality is the row's block's: latest, safe or finalized.
	Finality string `json:"finality"`
}

// cause is one movement behind a balance change.
type cause struct {
	Kind   string       `json:"kind"`
	TxHash string       `json:"transaction_hash"`
	Amount query.Amount `json:"amount"`
	// Outpoint is the output a UTXO chain's cause received or spent,
	// txid:vout.
	Outpoint   string  `json:"outpoint,omitempty"`
	Withdrawal *uint64 `json:"withdrawal_index"` // nil unless a withdrawal
	Validator  *uint64 `json:"validator_index"`
	// FeeParts, for a fee with a part beyond execution, are its parts.
	FeeParts *feeParts `json:"fee_parts,omitempty"`
}

// balanceChangePage is a page of an address's statement.
type balanceChangePage struct {
	BalanceChanges []balanceChange `json:"balance_changes"`
	NextPageToken  string          `json:"next_page_token"`
}

func toBalanceChange(c query.BalanceChange, l query.Label, fin query.Finality) balanceChange {
	contract, id := query.SplitHoldingKey(c.Contract)
	out := balanceChange{BlockNumber: c.Block, Time: timestamp(c.Time), Contract: contract, TokenID: id,
		Asset: l.Asset, Symbol: l.Symbol, Decimals: l.Decimals, Amount: c.Amount,
		BalanceAfter: c.BalanceAfter, Causes: make([]cause, len(c.Causes)),
		Difference: c.Difference, Internals: c.Internals, Finality: fin.Of(c.Block)}
	if c.Checked {
		out.Reconciled = &c.Reconciled
	}
	for i, cs := range c.Causes {
		out.Causes[i] = cause{Kind: cs.Kind, TxHash: cs.TxHash, Amount: cs.Amount}
		out.Causes[i].Outpoint, _ = cs.Outpoint()
		if index, validator, ok := cs.Withdrawal(); ok {
			out.Causes[i].Withdrawal, out.Causes[i].Validator = &index, &validator
		}
		if cs.Fee != nil {
			out.Causes[i].FeeParts = toFeeParts(*cs.Fee)
		}
	}
	return out
}

// balanceChanges is GET /v1/chains/{chain}/addresses/{address}/balance_changes:
// the statement, newest first, paged like transactions, in a range and
// filtered when asked (books.go).
func (s *Server) balanceChanges(w http.ResponseWriter, r *http.Request, a query.Account) error {
	return s.changeRange(w, r, a)
}

// appendBalanceChangePage appends, by hand, what json.Marshal writes of
// the balanceChangePage of rows (see toBalanceChange): a page is written
// as the transactions page is (txjson.go), without reflection.
func appendBalanceChangePage(b []byte, rows []query.BalanceChange, labels map[string]query.Label, next string, fin query.Finality) []byte {
	b = append(b, balanceChangePageOpen...)
	for i := range rows {
		b = appendBalanceChangeItem(b, i, &rows[i], query.LabelOf(labels, rows[i].Contract), fin)
	}
	return appendPageEnd(b, next)
}

// balanceChangePageOpen opens a balanceChangePage.
const balanceChangePageOpen = `{"balance_changes":[`

// appendBalanceChangeItem appends c, the i-th row of a page (from 0),
// with its finality by fin.
func appendBalanceChangeItem(b []byte, i int, c *query.BalanceChange, l query.Label, fin query.Finality) []byte {
	if i > 0 {
		b = append(b, ',')
	}
	b = append(b, '{')
	b = rowjson.AppendChange(b, c, &l, fin.Of(c.Block))
	return append(b, '}')
}

// tip is where a chain stands in the store: its newest stored block and
// its finality marks, against which a row's confirmations and finality
// are told.
type tip struct {
	head uint64
	fin  query.Finality
}

// headCache keeps the tip of each chain for a second, so that the
// confirmations and finality of a page cost no read of their own.
type headCache struct {
	mu sync.Mutex
	m  map[string]cachedHead
}

type cachedHead struct {
	tip  tip
	read time.Time
}

// headTTL is how long a chain's tip is reused: a block's confirmations
// and finality may lag the fetcher by that much.
const headTTL = time.Second

// head returns chain's tip: the number of its newest stored block (0
// when none is) and its finality marks.
func (s *Server) head(ctx context.Context, chain string) (tip, error) {
	now := s.now()
	s.heads.mu.Lock()
	h, ok := s.heads.m[chain]
	s.heads.mu.Unlock()
	if ok && now.Sub(h.read) < headTTL && !now.Before(h.read) {
		return h.tip, nil
	}
	b, found, err := s.store.Head(ctx, chain)
	if err != nil {
		return tip{}, err
	}
	if !found {
		b.Number = 0
	}
	fin, err := s.store.Finality(ctx, chain)
	if err != nil {
		return tip{}, err
	}
	t := tip{head: b.Number, fin: fin}
	s.heads.mu.Lock()
	if s.heads.m == nil {
		s.heads.m = make(map[string]cachedHead)
	}
	s.heads.m[chain] = cachedHead{tip: t, read: now}
	s.heads.mu.Unlock()
	return t, nil
}
