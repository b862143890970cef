package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/rowjson"
)

// balance is a balance as the API writes it.
type balance struct {
	Asset    string       `json:"asset"`
	Contract string       `json:"contract"`
	TokenID  string       `json:"token_id"`
	Symbol   string       `json:"symbol"`
	Name     string       `json:"name"`
	Decimals int          `json:"decimals"`
	Amount   query.Amount `json:"amount"`
	// Spendable and Immature split Amount on a chain some of whose
	// outputs must wait before they can be spent (chain.Maturing: a UTXO
	// chain's coinbase outputs), for its coin; absent elsewhere.
	Spendable   *query.Amount `json:"spendable,omitempty"`
	Immature    *query.Amount `json:"immature,omitempty"`
	BlockNumber uint64        `json:"block_number"`
	UpdateTime  *string       `json:"update_time"` // null: as of a block before the asset's first statement row
}

type balancesBody struct {
	Balances []balance `json:"balances"`
}

// transaction is a transaction as the API writes it.
type transaction struct {
	Hash        string       `json:"hash"`
	BlockNumber uint64       `json:"block_number"`
	BlockHash   string       `json:"block_hash"`
	BlockTime   string       `json:"block_time"`
	Index       uint         `json:"index"`
	Status      string       `json:"status"`
	From        string       `json:"from"`
	To          string       `json:"to"`
	Value       query.Amount `json:"value"`
	Fee         query.Amount `json:"fee"`
	// FeeParts are the fee's components, present when it has one beyond
	// execution (blob gas, a rollup's L1 data fee, an operator fee).
	FeeParts *feeParts `json:"fee_parts,omitempty"`
	// Mint is what an OP-stack deposit minted to its sender; absent when
	// none.
	Mint *query.Amount `json:"mint,omitempty"`
	// Detail is the family's document, whose members MarshalJSON
	// writes after Fee.
	Detail   json.RawMessage `json:"-"`
	Confirms uint64          `json:"confirmations"`
	// Finality is the block's: latest, safe or finalized.
	Finality  string     `json:"finality"`
	Transfers []transfer `json:"transfers"`
	// Unreadable says why the stored transaction could not be read (it is
	// then its key alone); absent otherwise.
	Unreadable string `json:"unreadable,omitempty"`
}

// feeParts are a fee's components (query.FeeParts), in wei.
type feeParts struct {
	Execution query.Amount `json:"execution"`
	Blob      query.Amount `json:"blob"`
	L1        query.Amount `json:"l1"`
	Operator  query.Amount `json:"operator"`
}

// toFeeParts is p as the API writes it: nil when the fee has no part
// beyond execution.
func toFeeParts(p query.FeeParts) *feeParts {
	if !p.Split() {
		return nil
	}
	return &feeParts{Execution: p.Execution, Blob: p.Blob, L1: p.L1, Operator: p.Operator}
}

// MarshalJSON writes t with its detail's members after fee, as
// appendTransaction does.
func (t transaction) MarshalJSON() ([]byte, error) {
	type plain transaction // without this method
	b, err := json.Marshal(plain(t))
	if err != nil {
		return nil, err
	}
	// Every string before it is quoted, its quotes escaped: the first
	// such key is the member's.
	i := bytes.Index(b, []byte(`,"confirmations":`))
	if i < 0 {
		return nil, errors.New("api: a transaction without confirmations")
	}
	return append(appendDetail(slices.Clip(b[:i]), t.Detail), b[i:]...), nil
}

// transfer is a movement of value inside a transaction: its own value,
// an internal movement (or a reverted call, with its error), or a token
// transfer.
type transfer struct {
	Position int          `json:"log_index"`
	Kind     string       `json:"kind"`
	Asset    string       `json:"asset"`
	Contract string       `json:"contract"`
	TokenID  string       `json:"token_id"`
	Symbol   string       `json:"symbol"`
	Name     string       `json:"name"`
	Decimals int          `json:"decimals"`
	From     string       `json:"from"`
	To       string       `json:"to"`
	Amount   query.Amount `json:"amount"`
	CallType string       `json:"call_type"`
	CallPath string       `json:"call_path"`
	Error    string       `json:"error"`
}

// transactionPage is a page of an address's transactions. appendTransactionPage
// writes it by hand; the type describes it (openapi test) and checks it.
type transactionPage struct {
	Transactions  []transaction `json:"transactions"`
	NextPageToken string        `json:"next_page_token"`
}

func ptr[T any](v T) *T { return &v }

func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// confirmations is the number of blocks from t's to the stored head,
// t's own included; 0 when the head is not known or below it.
func confirmations(t *query.Transaction, head uint64) uint64 {
	if head < t.BlockNumber {
		return 0
	}
	return head - t.BlockNumber + 1
}

// toTransaction renders t, with its confirmations against the stored
// head; with only set, just the transfers touching it.
func toTransaction(t query.Transaction, only string, at tip) transaction {
	out := transaction{Hash: t.Hash, BlockNumber: t.BlockNumber, BlockHash: t.BlockHash, BlockTime: timestamp(t.BlockTime),
		Index: t.Index, Status: t.Status, From: t.From, To: t.To, Value: t.Value, Fee: t.Fee, Detail: t.Detail,
		Confirms: confirmations(&t, at.head), Finality: at.fin.Of(t.BlockNumber), Unreadable: t.Unreadable, Transfers: make([]transfer, 0, len(t.Transfers)),
		FeeParts: toFeeParts(t.FeeParts)}
	if !t.Mint.IsZero() {
		out.Mint = &t.Mint
	}
	for _, f := range t.Transfers {
		if only != "" && f.From != only && f.To != only {
			continue
		}
		out.Transfers = append(out.Transfers, transfer{Position: f.Position, Kind: f.Kind, Asset: f.Asset, Contract: f.Contract,
			TokenID: f.TokenID, Symbol: f.Symbol, Name: f.Name, Decimals: f.Decimals, From: f.From, To: f.To, Amount: f.Amount,
			CallType: f.CallType, CallPath: f.CallPath, Error: f.Error})
	}
	return out
}

// notSubscribed is the answer to reading an address one is not subscribed to.
func notSubscribed(address string) error {
	return errorf(codeUnauthenticated, "requester is not subscribed for address '%s'", address)
}

// balances is GET /v1/chains/{chain}/addresses/{address}/balances.
func (s *Server) balances(w http.ResponseWriter, r *http.Request, a query.Account) error {
	chain, address, err := s.chainAddress(r)
	if err != nil {
		return err
	}
	if r.URL.RawQuery != "" {
		return s.balancesAt(w, r, a, chain, address)
	}
	sub, bs, err := s.store.SubscriptionBalances(r.Context(), a.ID, chain, address)
	if errors.Is(err, query.ErrNotSubscribed) {
		return notSubscribed(address)
	}
	if err != nil {
		return err
	}
	immature, err := s.immatureOf(r.Context(), a, chain, address, bs, true)
	if err != nil {
		return err
	}
	setState(w, sub)
	buf := s.bufs.get()
	defer s.bufs.put(buf)
	*buf = append(appendBalances(*buf, bs, immature), '\n')
	writePage(w, *buf)
	return nil
}

// toBalance renders b as a balance of the balances read, split into
// spendable and immature when immature is not nil.
func toBalance(b query.Balance, immature *query.Amount) balance {
	contract, id := query.SplitHoldingKey(b.Contract)
	out := balance{Asset: b.Asset, Contract: contract, TokenID: id, Symbol: b.Symbol, Name: b.Name, Decimals: b.Decimals,
		Amount: b.Amount, BlockNumber: b.Block, UpdateTime: ptr(timestamp(b.Updated))}
	out.split(immature)
	return out
}

// split sets b's spendable and immature parts, when immature is not nil.
func (b *balance) split(immature *query.Amount) {
	if immature == nil {
		return
	}
	b.Spendable, b.Immature = ptr(b.Amount.Sub(*immature)), ptr(*immature)
}

// appendBalances appends, by hand, what json.Marshal writes of the
// balancesBody of bs (see toBalance), bs[i] split by immature[i] when
// there is one; a test holds the two equal.
func appendBalances(b []byte, bs []query.Balance, immature []*query.Amount) []byte {
	b = append(b, `{"balances":[`...)
	for i := range bs {
		x := &bs[i]
		if i > 0 {
			b = append(b, ',')
		}
		contract, id := query.SplitHoldingKey(x.Contract)
		b = append(b, `{"asset":`...)
		b = rowjson.AppendString(b, x.Asset)
		b = append(b, `,"contract":`...)
		b = rowjson.AppendString(b, contract)
		b = append(b, `,"token_id":`...)
		b = rowjson.AppendString(b, id)
		b = append(b, `,"symbol":`...)
		b = rowjson.AppendString(b, x.Symbol)
		b = append(b, `,"name":`...)
		b = rowjson.AppendString(b, x.Name)
		b = append(b, `,"decimals":`...)
		b = strconv.AppendInt(b, int64(x.Decimals), 10)
		b = append(b, `,"amount":`...)
		b = rowjson.AppendAmount(b, x.Amount)
		if i < len(immature) && immature[i] != nil {
			b = append(b, `,"spendable":`...)
			b = rowjson.AppendAmount(b, x.Amount.Sub(*immature[i]))
			b = append(b, `,"immature":`...)
			b = rowjson.AppendAmount(b, *immature[i])
		}
		b = append(b, `,"block_number":`...)
		b = strconv.AppendUint(b, x.Block, 10)
		b = append(b, `,"update_time":"`...)
		if !x.Updated.IsZero() {
			// Digits, '-', ':', 'T' and 'Z': nothing to escape.
			b = x.Updated.UTC().AppendFormat(b, time.RFC3339)
		}
		b = append(b, `"}`...)
	}
	return append(b, `]}`...)
}

// transactions is GET /v1/chains/{chain}/addresses/{address}/transactions.
func (s *Server) transactions(w http.ResponseWriter, r *http.Request, a query.Account) error {
	if hasRangeParams(r.URL.RawQuery) {
		return s.transactionRange(w, r, a)
	}
	var after *query.TxCursor
	p, err := s.readPage(r, a, kindTransactions, func(rd *reader) {
		after = &query.TxCursor{BlockNumber: rd.uvarint(), Index: uint(rd.uvarint())}
	})
	if err != nil {
		return err
	}
	head, err := s.head(r.Context(), p.chain)
	if err != nil {
		return err
	}
	// The page is written into a pooled buffer as the store hands it
	// over, a transaction at a time; the one after the page, asked for to
	// know that there is a next page, only says so.
	buf := s.bufs.get()
	defer s.bufs.put(buf)
	var (
		b    = append((*buf)[:0], transactionPageOpen...)
		n    int
		last query.TxCursor
		more bool
	)
	sub, err := s.store.SubscriptionTransactionsFunc(r.Context(), a.ID, p.chain, p.address, after, p.size+1, func(t *query.Transaction, plain bool) error {
		if n == p.size {
			more = true
			return nil
		}
		b = appendTransactionItem(b, n, t, plain, p.address, head)
		n++
		last = query.TxCursor{BlockNumber: t.BlockNumber, Index: t.Index}
		return nil
	})
	*buf = b
	if errors.Is(err, query.ErrNotSubscribed) {
		return notSubscribed(p.address)
	}
	if err != nil {
		return err
	}
	var next string
	if more {
		next = p.next(appendUvarint(appendUvarint(nil, last.BlockNumber), uint64(last.Index)))
	}
	*buf = append(appendPageEnd(b, next), '\n')
	setState(w, sub)
	writePage(w, *buf)
	return nil
}

// transaction is GET /v1/chains/{chain}/transactions/{hash}: readable by
// a requester subscribed to one of its addresses; to anyone else it does
// not exist.
func (s *Server) transaction(w http.ResponseWriter, r *http.Request, a query.Account) error {
	chain, err := s.chain(r)
	if err != nil {
		return err
	}
	hash, err := s.parseHash(chain, r.PathValue("hash"))
	if err != nil {
		return err
	}
	if err := noParams(r); err != nil {
		return err
	}
	notFound := errorf(codeNotFound, "transaction '%s' not found", hash)
	t, err := s.store.Transaction(r.Context(), chain, hash)
	if errors.Is(err, query.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	// Readable through an address whose covered range holds it: a
	// transaction stored before the requester's history start, because
	// another requester tracked a counterparty, is not its to see.
	ok, err := s.store.Covers(r.Context(), a.ID, chain, t.BlockNumber, t.Addresses()...)
	if err != nil {
		return err
	}
	if !ok {
		return notFound
	}
	head, err := s.head(r.Context(), chain)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toTransaction(t, "", head))
	return nil
}

// parseQuery parses a query string, refusing malformed escapes.
func parseQuery(raw string) (url.Values, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, errorf(codeInvalidArgument, "malformed query string")
	}
	return q, nil
}
