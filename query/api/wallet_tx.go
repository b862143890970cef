package api

// A wallet's transactions: those of its used addresses, merged newest
// first without duplicates, each with what it moved across the wallet
// (from the wallet's statement: the same netting as its balance_changes).

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/wharfhq/wharf/query"
)

// walletTxBody is what a transaction moved across a wallet.
type walletTxBody struct {
	// Amount is what it moved into (positive) or out of the wallet, its
	// fee included.
	Amount query.Amount `json:"amount"`
	// Fee is the fee the wallet paid (where it funded every input).
	Fee query.Amount `json:"fee"`
	// Internal is true for a transfer between the wallet's own
	// addresses: it moves nothing but the fee out of the wallet.
	Internal bool `json:"internal"`
}

// walletTransactionPage is a page of a wallet's transactions: each a
// transaction as the address's list writes it, with a member wallet (a
// walletTxBody).
type walletTransactionPage struct {
	Transactions  []json.RawMessage `json:"transactions"`
	NextPageToken string            `json:"next_page_token"`
}

// walletTransactions is GET /v1/chains/{chain}/wallets/{wallet}/transactions:
// the transactions of the wallet's used addresses, newest first, paged
// as an address's are; each lists the transfers touching one of the
// wallet's addresses.
func (s *Server) walletTransactions(w http.ResponseWriter, r *http.Request, a query.Account) error {
	if hasRangeParams(r.URL.RawQuery) {
		return s.walletTransactionRange(w, r, a)
	}
	chainName, id, ws, _, err := s.chainWallet(r)
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
	sc := scope(a.ID, chainName, "wallet", id)
	var after *query.TxCursor
	if tok != "" {
		cur, err := codec.decode(kindWalletTransactions, sc, tok)
		if err != nil {
			return badToken()
		}
		rd := reader{b: cur}
		after = &query.TxCursor{BlockNumber: rd.uvarint(), Index: uint(rd.uvarint())}
		if rd.done() != nil {
			return badToken()
		}
	}
	wl, addrs, err := ws.Wallet(r.Context(), a.ID, chainName, id)
	if errors.Is(err, query.ErrNotFound) {
		return errorf(codeNotFound, "the requester has no wallet %s on %s", quote(id), chainName)
	}
	if err != nil {
		return err
	}
	// The page's transactions are among each address's first size+1
	// after the cursor: read those, keep each transaction once.
	mine := map[string]bool{}
	byKey := map[query.TxCursor]query.Transaction{}
	for _, x := range addrs {
		mine[x.Address] = true
		if !x.Used {
			continue
		}
		txs, err := s.store.AccountTransactions(r.Context(), a.ID, chainName, x.Address, after, size+1)
		if errors.Is(err, query.ErrNotSubscribed) {
			continue // unsubscribed by hand
		}
		if err != nil {
			return err
		}
		for _, t := range txs {
			byKey[query.TxCursor{BlockNumber: t.BlockNumber, Index: t.Index}] = t
		}
	}
	keys := make([]query.TxCursor, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y query.TxCursor) int {
		return cmp.Or(cmp.Compare(y.BlockNumber, x.BlockNumber), cmp.Compare(y.Index, x.Index))
	})
	var next string
	if len(keys) > size {
		keys = keys[:size]
		last := keys[size-1]
		next = codec.encode(kindWalletTransactions, sc, appendUvarint(appendUvarint(nil, last.BlockNumber), uint64(last.Index)))
	}
	return s.writeWalletTxs(w, r, a, wl, addrs, mine, keys, byKey, next)
}

// writeWalletTxs writes the page of wl's transactions of keys (in the
// page's order), each with what it moved across the wallet, and the
// page's next token.
func (s *Server) writeWalletTxs(w http.ResponseWriter, r *http.Request, a query.Account, wl query.Wallet, addrs []query.WalletAddress,
	mine map[string]bool, keys []query.TxCursor, byKey map[query.TxCursor]query.Transaction, next string) error {
	chainName := wl.Chain
	out := walletTransactionPage{Transactions: make([]json.RawMessage, 0, len(keys)), NextPageToken: next}
	if len(keys) == 0 {
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	lo, hi := keys[len(keys)-1].BlockNumber, keys[0].BlockNumber
	if lo > hi {
		lo, hi = hi, lo
	}
	blocks, err := s.walletBlocks(r.Context(), a, wl, addrs, lo, hi)
	if err != nil {
		return err
	}
	head, err := s.head(r.Context(), chainName)
	if err != nil {
		return err
	}
	for _, k := range keys {
		t := byKey[k]
		t.Transfers = slices.DeleteFunc(t.Transfers, func(f query.Transfer) bool { return !mine[f.From] && !mine[f.To] })
		body := walletTxBody{}
		if b := blocks[t.BlockNumber]; b != nil {
			if sum := b.txs[t.Hash]; sum != nil {
				body = walletTxBody{Amount: sum.amount, Fee: sum.fee, Internal: sum.internal()}
			}
		}
		item, err := withMember(toTransaction(t, "", head), "wallet", body)
		if err != nil {
			return err
		}
		out.Transactions = append(out.Transactions, item)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// withMember is v's JSON object with the member name: m added last.
func withMember(v any, name string, m any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	mb, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	b = append(b[:len(b)-1], ',')
	b = append(append(append(b, '"'), name...), `":`...)
	return append(append(b, mb...), '}'), nil
}
