package utxo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// Wallet is a descriptor wallet: the addresses of its ranged descriptors
// (a receive branch /0/* and a change branch /1/* are two), each derived
// until Gap consecutive addresses after its newest used one have no
// history, as BIP 44 wallets look for their coins.
type Wallet struct {
	gap   int
	descs []*Descriptor
	addrs [][]Address // derived, per descriptor, from index 0
	used  []int       // the highest used index per descriptor, -1 for none
	index map[string]WalletAddress
	// usedAddrs are the addresses MarkUsed was told of.
	usedAddrs map[string]bool
}

// WalletAddress places an address in its wallet: the descriptor's
// position in NewWallet's list and the index it is derived at.
type WalletAddress struct {
	Descriptor int
	Index      uint32
}

// NewWallet makes a wallet of ranged descriptors of one network with gap
// limit gap (CheckGapLimit), and derives the first gap addresses of each.
// Errors wrap ErrInvalidDescriptor.
func NewWallet(gap int, descs ...*Descriptor) (*Wallet, error) {
	if err := CheckGapLimit(gap); err != nil {
		return nil, err
	}
	if len(descs) == 0 {
		return nil, fmt.Errorf("a wallet needs a descriptor: %w", ErrInvalidDescriptor)
	}
	w := &Wallet{gap: gap, descs: descs, addrs: make([][]Address, len(descs)), used: make([]int, len(descs)), index: map[string]WalletAddress{}, usedAddrs: map[string]bool{}}
	for i, d := range descs {
		if !d.Ranged {
			return nil, fmt.Errorf("descriptor %s: a wallet's descriptors end in /*: %w", d.String, ErrInvalidDescriptor)
		}
		if d.net != descs[0].net {
			return nil, fmt.Errorf("descriptor %s is of %s, %s of %s: %w", d.String, d.net, descs[0].String, descs[0].net, ErrInvalidDescriptor)
		}
		w.used[i] = -1
		if _, err := w.extend(i); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// extend derives descriptor i's addresses up to gap after its newest
// used one and returns those it derived.
func (w *Wallet) extend(i int) ([]Address, error) {
	from, to := uint32(len(w.addrs[i])), uint32(w.used[i]+1+w.gap)
	if to <= from {
		return nil, nil
	}
	as, err := w.descs[i].DeriveRange(from, to)
	if err != nil {
		return nil, err
	}
	for k, a := range as {
		w.index[a.String] = WalletAddress{Descriptor: i, Index: from + uint32(k)}
	}
	w.addrs[i] = append(w.addrs[i], as...)
	return as, nil
}

// Addresses returns every address derived, descriptor by descriptor, in
// index order.
func (w *Wallet) Addresses() []string {
	var out []string
	for _, as := range w.addrs {
		for _, a := range as {
			out = append(out, a.String)
		}
	}
	return out
}

// Lookup places addr in the wallet, false when it is not one derived.
func (w *Wallet) Lookup(addr string) (WalletAddress, bool) {
	p, ok := w.index[addr]
	return p, ok
}

// Used returns the addresses MarkUsed was told of, in Addresses' order.
func (w *Wallet) Used() []string {
	var out []string
	for i, as := range w.addrs {
		for k := 0; k <= w.used[i] && k < len(as); k++ {
			if w.isUsed(as[k].String) {
				out = append(out, as[k].String)
			}
		}
	}
	return out
}

// MarkUsed records that addr, one of the wallet's, has history, and
// derives its descriptor's addresses on to gap after it; it returns the
// addresses derived, whose history is still to read.
func (w *Wallet) MarkUsed(addr string) ([]string, error) {
	p, ok := w.index[addr]
	if !ok {
		return nil, fmt.Errorf("%s is not an address of the wallet", addr)
	}
	w.usedAddrs[addr] = true
	if int(p.Index) > w.used[p.Descriptor] {
		w.used[p.Descriptor] = int(p.Index)
	}
	as, err := w.extend(p.Descriptor)
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String
	}
	return out, err
}

func (w *Wallet) isUsed(a string) bool { return w.usedAddrs[a] }

// Discover finds the wallet's used addresses in blocks from to to, and
// returns how many blocks it read whole. Where the node keeps an address
// index (btcd) it asks History of each address derived (one
// searchrawtransactions a 500 transactions of the address, none read
// whole), deriving on as it finds addresses used. Else (Bitcoin Core) it
// scans the blocks with every derived address tracked, and again while a
// scan finds an address that derives new ones: a wallet whose use jumps
// k times by up to its gap costs k+1 scans of the range.
func (r *Reader) Discover(ctx context.Context, w *Wallet, from, to uint64) (int, error) {
	pending := w.Addresses()
	for len(pending) > 0 {
		a := pending[0]
		pending = pending[1:]
		hs, err := r.History(ctx, a, from, to)
		if errors.Is(err, chain.ErrNotImplemented) {
			return r.scan(ctx, w, from, to)
		}
		if err != nil {
			return 0, err
		}
		if len(hs) > 0 {
			more, err := w.MarkUsed(a)
			if err != nil {
				return 0, err
			}
			pending = append(pending, more...)
		}
	}
	return 0, nil
}

func (r *Reader) scan(ctx context.Context, w *Wallet, from, to uint64) (int, error) {
	reads := 0
	for {
		tracked := map[string]bool{}
		for _, a := range w.Addresses() {
			tracked[a] = true
		}
		grew := false
		for h := from; h <= to; {
			acts, err := r.Activity(ctx, chain.Query{From: h, To: to, Tracked: tracked, Pass: "discover"})
			if err != nil {
				return reads, err
			}
			if len(acts) == 0 {
				break
			}
			for _, a := range acts {
				reads++
				for _, m := range a.Moves {
					if w.isUsed(m.Address) {
						continue
					}
					more, err := w.MarkUsed(m.Address)
					if err != nil {
						return reads, err
					}
					grew = grew || len(more) > 0
				}
			}
			h = acts[len(acts)-1].Block.Number + 1
		}
		if !grew {
			return reads, nil
		}
	}
}

// WalletTx is one transaction of a wallet's statement: its addresses'
// moves in it summed, change between them netted out.
type WalletTx struct {
	Tx string
	// Amount is what entered (positive) or left the wallet, the fee
	// apart: zero for a transfer between its own addresses.
	Amount query.Amount
	// Fee is the fee the wallet paid: where its addresses funded every
	// input, the inputs less the outputs; zero otherwise.
	Fee query.Amount
	// Internal is true when every input and output paying an address
	// is the wallet's (OP_RETURN outputs pay none).
	Internal bool
}

// Statement folds a block's activity (read with the wallet's addresses
// tracked) into the wallet's transactions, in block order. The
// per-address moves stay as they are; this is the wallet's view.
func (w *Wallet) Statement(a chain.BlockActivity) ([]WalletTx, error) {
	sums := map[string]query.Amount{}
	for _, m := range a.Moves {
		if _, ok := w.index[m.Address]; ok && m.Asset == query.AssetNative {
			sums[m.Tx] = sums[m.Tx].Add(m.Amount)
		}
	}
	var out []WalletTx
	for _, tx := range a.Txs {
		sum, ok := sums[tx.Hash]
		if !ok {
			continue
		}
		var d Detail
		if err := json.Unmarshal(tx.Detail, &d); err != nil {
			return nil, fmt.Errorf("transaction %s: detail: %w", tx.Hash, err)
		}
		funded, internal := !d.Coinbase, true
		var in, outSum int64
		for _, i := range d.Inputs {
			in += i.Value
			if _, ok := w.index[i.Address]; !ok {
				funded, internal = false, false
			}
		}
		for _, o := range d.Outputs {
			outSum += o.Value
			if _, ok := w.index[o.Address]; o.Address != "" && !ok {
				internal = false
			}
		}
		t := WalletTx{Tx: tx.Hash, Amount: sum, Internal: internal && !d.Coinbase}
		if funded {
			t.Fee = query.AmountOf(in - outSum)
			t.Amount = sum.Add(t.Fee)
		}
		out = append(out, t)
	}
	return out, nil
}
