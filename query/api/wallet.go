package api

// Descriptor wallets: a requester names a set of output descriptors on a
// chain whose family derives addresses (chain.Deriver); the server
// derives and subscribes the addresses, the wallet keeper extends them
// by the gap limit as they get used, and the wallet's balances are its
// addresses' summed.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/rpcstatus"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// maxWalletDescriptors bounds a wallet's descriptors: a receive and a
// change branch of a few accounts.
const maxWalletDescriptors = 8

// maxWalletBody bounds a wallet request: 8 descriptors of 20 keys.
const maxWalletBody = 64 << 10

// walletID is a wallet's name in its path: as an AIP-122 resource ID.
var walletID = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// walletRequest is the body of PUT /v1/chains/{chain}/wallets/{wallet},
// as Bitcoin Core's importdescriptors takes its descriptors.
type walletRequest struct {
	Descriptors []struct {
		Descriptor string `json:"descriptor"`
		Internal   bool   `json:"internal"`
	} `json:"descriptors"`
	GapLimit   int             `json:"gap_limit,omitempty"`
	StartBlock json.RawMessage `json:"start_block,omitempty"`
}

// walletBody is the wallet resource.
type walletBody struct {
	Name             string           `json:"name"`
	GapLimit         int              `json:"gap_limit"`
	Descriptors      []descriptorBody `json:"descriptors"`
	AddressCount     int              `json:"address_count"`
	UsedAddressCount int              `json:"used_address_count"`
	StartBlock       *uint64          `json:"start_block"`
	CreateTime       string           `json:"create_time"`
}

type descriptorBody struct {
	Descriptor   string `json:"descriptor"`
	Internal     bool   `json:"internal"`
	DerivedCount uint32 `json:"derived_count"`
	// NextIndex is the first index after the newest used one: where a
	// wallet hands out its next address.
	NextIndex int64 `json:"next_index"`
}

type walletAddressBody struct {
	Address    string `json:"address"`
	Descriptor int    `json:"descriptor"`
	Index      uint32 `json:"index"`
	Internal   bool   `json:"internal"`
	Used       bool   `json:"used"`
}

type walletAddressesBody struct {
	Addresses []walletAddressBody `json:"addresses"`
}

// walletBalanceBody is a wallet's balance of its chain's coin.
type walletBalanceBody struct {
	Balances []balance `json:"balances"`
}

func toWalletBody(w query.Wallet, addrs []query.WalletAddress) walletBody {
	b := walletBody{Name: w.Name(), GapLimit: w.GapLimit, AddressCount: len(addrs), StartBlock: w.StartBlock, CreateTime: timestamp(w.Created),
		Descriptors: make([]descriptorBody, len(w.Descriptors))}
	for i, d := range w.Descriptors {
		b.Descriptors[i] = descriptorBody{Descriptor: d.Descriptor, Internal: d.Internal, DerivedCount: d.Derived, NextIndex: d.Used + 1}
	}
	for _, a := range addrs {
		if a.Used {
			b.UsedAddressCount++
		}
	}
	return b
}

// wallets is the wallet store and the deriver of chain; an error when the
// chain's family has no wallets or the store keeps none.
func (s *Server) wallets(chainName string) (query.WalletStore, chain.Deriver, error) {
	d, ok := s.syntax[chainName].(chain.Deriver)
	if !ok {
		return nil, nil, errorf(codeInvalidArgument, "chain %s has no descriptor wallets: its family derives no addresses (subscribe to addresses instead)", chainName)
	}
	ws, ok := s.store.(query.WalletStore)
	if !ok {
		return nil, nil, errorf(codeUnimplemented, "this server keeps no wallets")
	}
	return ws, d, nil
}

// chainWallet reads and validates the {chain} and {wallet} of a path.
func (s *Server) chainWallet(r *http.Request) (chainName, id string, ws query.WalletStore, d chain.Deriver, err error) {
	if chainName, err = s.chain(r); err != nil {
		return "", "", nil, nil, err
	}
	id = r.PathValue("wallet")
	if !walletID.MatchString(id) {
		return "", "", nil, nil, errorf(codeInvalidArgument, "wallet %s: a wallet's name is 1 to 63 of a-z, 0-9 and '-', starting with a letter or digit", quote(id))
	}
	ws, d, err = s.wallets(chainName)
	return chainName, id, ws, d, err
}

// putWallet is PUT /v1/chains/{chain}/wallets/{wallet}: creates the
// wallet and subscribes its first addresses; the same request again
// answers the wallet as it is, another one for the same name 409.
func (s *Server) putWallet(w http.ResponseWriter, r *http.Request, a query.Account) error {
	chainName, id, ws, d, err := s.chainWallet(r)
	if err != nil {
		return err
	}
	if err := noParams(r); err != nil {
		return err
	}
	want, start, err := readWalletRequest(r, d)
	if err != nil {
		return err
	}
	if want.StartBlock, err = s.startBlock(chainName, start); err != nil {
		return err
	}
	want.Chain, want.ID = chainName, id
	var addrs []query.WalletAddress
	for i := range want.Descriptors {
		wd := &want.Descriptors[i]
		as, err := d.Derive(wd.Descriptor, 0, uint32(want.GapLimit))
		if err != nil {
			return errorf(codeInvalidArgument, "%s", err.Error())
		}
		for k, addr := range as {
			addrs = append(addrs, query.WalletAddress{Address: addr, Descriptor: i, Index: uint32(k)})
		}
		wd.Derived, wd.Used = uint32(len(as)), -1
	}
	if _, err := ws.CreateWallet(r.Context(), a.ID, want, addrs); err != nil {
		return err
	}
	got, gotAddrs, err := ws.Wallet(r.Context(), a.ID, chainName, id)
	if err != nil {
		return err
	}
	if got.GapLimit != want.GapLimit || !equalStart(got.StartBlock, want.StartBlock) || !slices.EqualFunc(got.Descriptors, want.Descriptors, func(x, y query.WalletDescriptor) bool {
		return x.Descriptor == y.Descriptor && x.Internal == y.Internal
	}) {
		return &Error{Code: rpcstatus.AlreadyExists, Message: "wallet " + got.Name() + " exists with other descriptors, gap limit or start block: DELETE it first, or PUT another name"}
	}
	writeJSON(w, http.StatusOK, toWalletBody(got, gotAddrs))
	return nil
}

// equalStart reports whether two start heights are the same (or both
// absent).
func equalStart(a, b *uint64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// readWalletRequest reads and checks a wallet's body: its descriptors in
// canonical form, its gap limit bounded; start is its start_block, for
// Server.startBlock.
func readWalletRequest(r *http.Request, d chain.Deriver) (w query.Wallet, start json.RawMessage, err error) {
	w, req, err := readWallet(r, d)
	if string(req.StartBlock) != "null" {
		start = req.StartBlock
	}
	return w, start, err
}

// readWallet does readWalletRequest's work, returning the request read.
func readWallet(r *http.Request, d chain.Deriver) (query.Wallet, walletRequest, error) {
	var w query.Wallet
	var req walletRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWalletBody+1))
	if err != nil {
		return w, req, err
	}
	if len(body) > maxWalletBody {
		return w, req, errorf(codeInvalidArgument, "request body longer than %d bytes", maxWalletBody)
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.More() {
		return w, req, errorf(codeInvalidArgument, "the body must be one JSON object with descriptors ([{descriptor, internal}]), gap_limit and start_block: %s", quote(errText(err)))
	}
	if len(req.Descriptors) == 0 || len(req.Descriptors) > maxWalletDescriptors {
		return w, req, errorf(codeInvalidArgument, "a wallet has 1 to %d descriptors, such as a receive branch .../0/* and a change branch .../1/* (internal): %d given", maxWalletDescriptors, len(req.Descriptors))
	}
	if w.GapLimit, err = d.GapLimit(req.GapLimit); err != nil {
		return w, req, errorf(codeInvalidArgument, "%s", err.Error())
	}
	for _, rd := range req.Descriptors {
		c, err := d.ParseDescriptor(rd.Descriptor)
		if err != nil {
			return w, req, errorf(codeInvalidArgument, "%s", err.Error())
		}
		if slices.ContainsFunc(w.Descriptors, func(x query.WalletDescriptor) bool { return x.Descriptor == c }) {
			return w, req, errorf(codeInvalidArgument, "descriptor %s given twice", quote(c))
		}
		w.Descriptors = append(w.Descriptors, query.WalletDescriptor{Descriptor: c, Internal: rd.Internal})
	}
	return w, req, nil
}

// getWallet is GET /v1/chains/{chain}/wallets/{wallet}.
func (s *Server) getWallet(w http.ResponseWriter, r *http.Request, a query.Account) error {
	wl, addrs, err := s.readWallet(r, a)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toWalletBody(wl, addrs))
	return nil
}

// readWallet reads the wallet of a path, refusing query parameters.
func (s *Server) readWallet(r *http.Request, a query.Account) (query.Wallet, []query.WalletAddress, error) {
	chainName, id, ws, _, err := s.chainWallet(r)
	if err != nil {
		return query.Wallet{}, nil, err
	}
	if err := noParams(r); err != nil {
		return query.Wallet{}, nil, err
	}
	wl, addrs, err := ws.Wallet(r.Context(), a.ID, chainName, id)
	if errors.Is(err, query.ErrNotFound) {
		return wl, nil, errorf(codeNotFound, "the requester has no wallet %s on %s", quote(id), chainName)
	}
	return wl, addrs, err
}

// deleteWallet is DELETE /v1/chains/{chain}/wallets/{wallet}: its
// addresses are unsubscribed, unless another of the requester's wallets
// derives them.
func (s *Server) deleteWallet(w http.ResponseWriter, r *http.Request, a query.Account) error {
	chainName, id, ws, _, err := s.chainWallet(r)
	if err != nil {
		return err
	}
	if err := noParams(r); err != nil {
		return err
	}
	err = ws.DeleteWallet(r.Context(), a.ID, chainName, id)
	if errors.Is(err, query.ErrNotFound) {
		return errorf(codeNotFound, "the requester has no wallet %s on %s", quote(id), chainName)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct{}{})
	return nil
}

// walletAddresses is GET /v1/chains/{chain}/wallets/{wallet}/addresses:
// every address derived, in descriptor and index order.
func (s *Server) walletAddresses(w http.ResponseWriter, r *http.Request, a query.Account) error {
	wl, addrs, err := s.readWallet(r, a)
	if err != nil {
		return err
	}
	out := walletAddressesBody{Addresses: make([]walletAddressBody, len(addrs))}
	for i, x := range addrs {
		out.Addresses[i] = walletAddressBody{Address: x.Address, Descriptor: x.Descriptor, Index: x.Index,
			Internal: wl.Descriptors[x.Descriptor].Internal, Used: x.Used}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// walletBalances is GET /v1/chains/{chain}/wallets/{wallet}/balances: the
// sum of its used addresses' balances of the chain's coin, as of the
// oldest block one of them was read at.
func (s *Server) walletBalances(w http.ResponseWriter, r *http.Request, a query.Account) error {
	if r.URL.RawQuery != "" {
		return s.walletBalancesAt(w, r, a)
	}
	wl, addrs, err := s.readWallet(r, a)
	if err != nil {
		return err
	}
	var sum *balance
	var immature *query.Amount // the sum of the addresses' immature parts, on a chain that splits
	for _, x := range addrs {
		if !x.Used {
			continue
		}
		bs, err := s.store.AccountBalances(r.Context(), a.ID, wl.Chain, x.Address)
		if errors.Is(err, query.ErrNotSubscribed) {
			continue // unsubscribed by hand
		}
		if err != nil {
			return err
		}
		imm, err := s.immatureOf(r.Context(), a, wl.Chain, x.Address, bs, true)
		if err != nil {
			return err
		}
		for i, b := range bs {
			if b.Asset != query.AssetNative {
				continue
			}
			if i < len(imm) && imm[i] != nil {
				immature = ptr(imm[i].Add(ptrValue(immature)))
			}
			if sum == nil {
				v := toBalance(b, nil)
				sum = &v
				continue
			}
			sum.Amount = sum.Amount.Add(b.Amount)
			if b.Block < sum.BlockNumber {
				sum.BlockNumber, sum.UpdateTime = b.Block, ptr(timestamp(b.Updated))
			}
		}
	}
	if sum != nil {
		sum.split(immature)
	}
	out := walletBalanceBody{Balances: []balance{}}
	if sum != nil {
		out.Balances = append(out.Balances, *sum)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ptrValue is *p, the zero value for nil.
func ptrValue[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}

// maxWalletRows bounds the rows of one address a wallet statement reads.
const maxWalletRows = 10_000

// walletChange is a row of a wallet's statement: its addresses' rows of
// one block, summed, with the transactions behind them.
type walletChange struct {
	BlockNumber  uint64       `json:"block_number"`
	Time         string       `json:"time"`
	Amount       query.Amount `json:"amount"`
	BalanceAfter query.Amount `json:"balance_after"`
	// Reconciled is true when every address's row of the block was
	// checked against the node and agreed, false when one disagreed;
	// nil when one was not checked.
	Reconciled   *bool                `json:"reconciled"`
	Difference   query.Amount         `json:"difference"`
	Transactions []walletChangeTxBody `json:"transactions"`
}

// walletChangeTxBody is a transaction of a wallet's statement row.
type walletChangeTxBody struct {
	TxHash string `json:"transaction_hash"`
	// Amount is what the transaction moved into (positive) or out of the
	// wallet, its fee included.
	Amount query.Amount `json:"amount"`
	// Fee is the fee the wallet paid (where it funded every input).
	Fee query.Amount `json:"fee"`
	// Internal is true for a transfer between the wallet's own
	// addresses: it moves nothing but the fee out of the wallet.
	Internal bool `json:"internal"`
}

type walletChangesBody struct {
	BalanceChanges []walletChange `json:"balance_changes"`
	NextPageToken  string         `json:"next_page_token"`
}

// walletTxSum is a transaction's causes in a wallet's addresses' rows of
// a block, netted across the wallet.
type walletTxSum struct {
	amount, fee, moved query.Amount // moved: the causes but the fee
	spent              bool
}

// internal reports whether the transaction moved value only between the
// wallet's own addresses: it spent the wallet's outputs, and nothing but
// the fee left.
func (t *walletTxSum) internal() bool { return t.spent && t.moved.IsZero() }

// walletBlock is a block of a wallet's statement: its addresses' rows
// summed, and their causes by transaction, in the order first met.
type walletBlock struct {
	row             walletChange
	time            time.Time
	txs             map[string]*walletTxSum
	order           []string
	checked, agreed bool
}

// walletBlocks reads the statement rows of the coin of wl's used
// addresses in blocks from to to (both included), summed per block and
// per transaction: in a bounded number of queries when the store reads
// many addresses' statements at once, else a read per address.
func (s *Server) walletBlocks(ctx context.Context, a query.Account, wl query.Wallet, addrs []query.WalletAddress, from, to uint64) (map[uint64]*walletBlock, error) {
	ws, ok := s.store.(query.WalletStatementStore)
	if !ok {
		return s.walletBlocksEach(ctx, a, wl, addrs, from, to)
	}
	var used []string
	for _, x := range addrs {
		if x.Used {
			used = append(used, x.Address)
		}
	}
	rowsOf := map[string][]query.BalanceChange{}
	err := ws.WalletBalanceChanges(ctx, a.ID, wl.Chain, used, from, to, maxWalletRows, func(c *query.BalanceChange) error {
		if c.Contract == "" {
			r := *c
			r.Causes = slices.Clone(c.Causes)
			rowsOf[c.Address] = append(rowsOf[c.Address], r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	blocks := map[uint64]*walletBlock{}
	for _, x := range addrs {
		if !x.Used {
			continue
		}
		for i := range rowsOf[x.Address] {
			addWalletRow(blocks, &rowsOf[x.Address][i])
		}
	}
	return blocks, nil
}

// walletBlocksEach is walletBlocks reading each used address's rows by
// itself, newest first, at most maxWalletRows of each.
func (s *Server) walletBlocksEach(ctx context.Context, a query.Account, wl query.Wallet, addrs []query.WalletAddress, from, to uint64) (map[uint64]*walletBlock, error) {
	blocks := map[uint64]*walletBlock{}
	for _, x := range addrs {
		if !x.Used {
			continue
		}
		var after *query.ChangeCursor
		if to < math.MaxUint64 {
			after = &query.ChangeCursor{Block: to + 1} // rows at or before to
		}
	rows:
		for read := 0; read < maxWalletRows; {
			rows, err := s.store.AccountBalanceChanges(ctx, a.ID, wl.Chain, x.Address, after, 1000)
			if errors.Is(err, query.ErrNotSubscribed) {
				break
			}
			if err != nil {
				return nil, err
			}
			for i := range rows {
				if rows[i].Block < from {
					break rows
				}
				if rows[i].Contract == "" {
					addWalletRow(blocks, &rows[i])
				}
			}
			read += len(rows)
			if len(rows) < 1000 {
				break
			}
			last := rows[len(rows)-1]
			after = &query.ChangeCursor{Block: last.Block, Contract: last.Contract}
		}
	}
	return blocks, nil
}

// addWalletRow adds statement row c of the wallet's coin to its block.
func addWalletRow(blocks map[uint64]*walletBlock, c *query.BalanceChange) {
	b := blocks[c.Block]
	if b == nil {
		b = &walletBlock{row: walletChange{BlockNumber: c.Block, Time: timestamp(c.Time)}, time: c.Time, txs: map[string]*walletTxSum{}, checked: true, agreed: true}
		blocks[c.Block] = b
	}
	b.row.Amount = b.row.Amount.Add(c.Amount)
	b.row.Difference = b.row.Difference.Add(c.Difference)
	b.checked = b.checked && c.Checked
	b.agreed = b.agreed && c.Reconciled
	for _, cs := range c.Causes {
		t := b.txs[cs.TxHash]
		if t == nil {
			t = &walletTxSum{}
			b.txs[cs.TxHash] = t
			b.order = append(b.order, cs.TxHash)
		}
		t.amount = t.amount.Add(cs.Amount)
		if cs.Kind == query.KindFee {
			t.fee = t.fee.Sub(cs.Amount)
		} else {
			t.moved = t.moved.Add(cs.Amount)
		}
		t.spent = t.spent || cs.Kind == query.KindSpent || cs.Kind == query.KindFee
	}
}
