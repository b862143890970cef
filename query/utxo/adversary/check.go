package adversary

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/utxo"
)

// Violation is one invariant broken.
type Violation struct {
	// Rule is one of: chain (the reader's blocks are not the node's),
	// balance (the moves' sum is not the unspent outputs' sum), outputs
	// (the outputs the moves leave open are not the node's unspent
	// ones), immature (the coinbase outputs open under 100
	// confirmations differ), sign (a received or coinbase move not
	// positive, a spent or fee move not negative), mature (the node
	// refused to spend a coinbase output utxo.Mature said it could),
	// untracked (a move of
	// an address not tracked), replaced (a transaction replaced in the
	// mempool booked), transactions (the address's transactions are not
	// the node's).
	Rule    string
	Address string
	Block   uint64
	Detail  string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s at block %d: %s", v.Rule, v.Address, v.Block, v.Detail)
}

// Checker follows the chain with a utxo.Reader as the fetcher does (the
// blocks it has not read, from the newest it holds that is still the
// node's) and compares what the moves add up to with the node's view.
type Checker struct {
	reader  *utxo.Reader
	node    Node
	tracked map[string]bool
	// blocks are the activities read, by height from 0.
	blocks   []chain.BlockActivity
	coinbase map[string]bool // txid: a coinbase, for Core's view
	// Reads counts the blocks read through the reader, reorgs included.
	Reads int
	// Wallet, when set, is a wallet of tracked addresses whose
	// statement (utxo.Wallet.Statement) is checked too.
	Wallet *utxo.Wallet
}

// NewChecker makes a checker of reader's activity for tracked against
// node, the same node reader reads.
func NewChecker(reader *utxo.Reader, node Node, tracked []string) *Checker {
	t := map[string]bool{}
	for _, a := range tracked {
		t[a] = true
	}
	return &Checker{reader: reader, node: node, tracked: t, coinbase: map[string]bool{}}
}

// sync reads the blocks the checker lacks up to the node's tip.
func (c *Checker) sync(ctx context.Context, tip uint64) error {
	// Drop the blocks no longer the node's.
	for len(c.blocks) > 0 {
		top := c.blocks[len(c.blocks)-1].Block
		var hash string
		if err := c.node.Call(ctx, &hash, "getblockhash", top.Number); err == nil && hash == top.Hash && top.Number <= tip {
			break
		}
		c.blocks = c.blocks[:len(c.blocks)-1]
	}
	for uint64(len(c.blocks)) <= tip {
		from := uint64(len(c.blocks))
		acts, err := c.reader.Activity(ctx, chain.Query{From: from, To: tip, Tracked: c.tracked, Pass: "head"})
		if err != nil {
			return err
		}
		if len(acts) == 0 {
			return fmt.Errorf("activity from %d to %d: no block", from, tip)
		}
		for _, a := range acts {
			if n := len(c.blocks); n > 0 && a.Block.ParentHash != c.blocks[n-1].Block.Hash {
				return fmt.Errorf("block %d %s: parent %s, the block before is %s", a.Block.Number, a.Block.Hash, a.Block.ParentHash, c.blocks[n-1].Block.Hash)
			}
			if a.Block.Number != uint64(len(c.blocks)) {
				return fmt.Errorf("block %d read where %d was asked", a.Block.Number, len(c.blocks))
			}
			c.blocks = append(c.blocks, a)
			c.Reads++
		}
	}
	return nil
}

// statement is what the reader's moves say of one address.
type statement struct {
	balance query.Amount
	open    map[string]int64 // outpoint: value received
	cb      map[string]bool  // outpoint: a coinbase output
	txs     map[string]bool
}

// Check reads the blocks the checker lacks and compares, for every
// tracked address, the reader's moves with the node's view; replaced are
// transactions replaced in the mempool, which must never be booked.
func (c *Checker) Check(ctx context.Context, dialect string, replaced map[string]bool) ([]Violation, error) {
	addrs := slices.Sorted(maps.Keys(c.tracked))
	v, err := nodeView(ctx, c.node, dialect, c.reader.Network(), addrs, c.coinbase)
	if err != nil {
		return nil, fmt.Errorf("the node's view: %w", err)
	}
	if err := c.sync(ctx, v.tip); err != nil {
		return nil, fmt.Errorf("reading the chain: %w", err)
	}
	var out []Violation
	bad := func(rule, addr, format string, args ...any) {
		out = append(out, Violation{Rule: rule, Address: addr, Block: v.tip, Detail: fmt.Sprintf(format, args...)})
	}
	if top := c.blocks[len(c.blocks)-1].Block; top.Hash != v.hash {
		bad("chain", "", "the reader's tip %d is %s, the node's %s", top.Number, top.Hash, v.hash)
	}
	st := map[string]*statement{}
	for _, a := range addrs {
		st[a] = &statement{open: map[string]int64{}, cb: map[string]bool{}, txs: map[string]bool{}}
	}
	for _, b := range c.blocks {
		for _, tx := range b.Txs {
			if replaced[tx.Hash] {
				bad("replaced", "", "transaction %s, replaced in the mempool, is listed in block %d", tx.Hash, b.Block.Number)
			}
			for _, p := range tx.Parties {
				if s := st[p]; s != nil {
					s.txs[tx.Hash] = true
				}
			}
		}
		for _, m := range b.Moves {
			s := st[m.Address]
			if s == nil {
				bad("untracked", m.Address, "a move in block %d: %+v", b.Block.Number, m)
				continue
			}
			s.balance = s.balance.Add(m.Amount)
			sign := m.Amount.Sign()
			switch m.Kind {
			case query.KindReceived, query.KindCoinbase:
				if sign <= 0 {
					bad("sign", m.Address, "%s move %s of %s in block %d", m.Kind, m.Amount, m.Ref, b.Block.Number)
				}
				s.open[m.Ref] = m.Amount.Big().Int64()
				s.cb[m.Ref] = m.Kind == query.KindCoinbase
			case query.KindSpent:
				if sign >= 0 {
					bad("sign", m.Address, "spent move %s of %s in block %d", m.Amount, m.Ref, b.Block.Number)
				}
				_, op, _ := strings.Cut(m.Ref, ":")
				if _, ok := s.open[op]; !ok {
					bad("outputs", m.Address, "spends %s in block %d, which it never received", op, b.Block.Number)
				}
				delete(s.open, op)
			case query.KindFee:
				if sign >= 0 {
					bad("sign", m.Address, "fee move %s in block %d", m.Amount, b.Block.Number)
				}
				// The spends the fee took whole.
				for _, ref := range strings.Fields(m.Ref) {
					_, op, _ := strings.Cut(ref, ":")
					if _, ok := s.open[op]; !ok {
						bad("outputs", m.Address, "the fee spends %s in block %d, which it never received", op, b.Block.Number)
					}
					delete(s.open, op)
				}
			}
		}
	}
	if c.Wallet != nil {
		out = append(out, c.checkWallet(v)...)
	}
	for _, a := range addrs {
		s := st[a]
		var sum int64
		node := map[string]Coin{}
		var immature int64
		for _, u := range v.unspent[a] {
			sum += u.Value
			node[u.Outpoint.String()] = u
			// The node's rule, written out rather than utxo.Mature's: a
			// coinbase output is spent in a block 100 above its own.
			if u.Coinbase && v.tip+1-u.Height < 100 {
				immature += u.Value
			}
		}
		if s.balance.Cmp(query.AmountOf(sum)) != 0 {
			bad("balance", a, "the moves add up to %s, the node's unspent outputs to %d", s.balance, sum)
		}
		for op, value := range s.open {
			u, ok := node[op]
			switch {
			case !ok:
				bad("outputs", a, "%s (%d) open by the moves, not unspent by the node", op, value)
			case u.Value != value:
				bad("outputs", a, "%s received as %d, the node says %d", op, value, u.Value)
			case u.Coinbase != s.cb[op]:
				bad("outputs", a, "%s booked as coinbase %v, the node says %v", op, s.cb[op], u.Coinbase)
			}
		}
		for op, u := range node {
			if _, ok := s.open[op]; !ok {
				bad("outputs", a, "%s (%d) unspent by the node, not open by the moves", op, u.Value)
			}
		}
		if b := utxo.BalanceAt(c.blocks, a, v.tip); b.Immature.Cmp(query.AmountOf(immature)) != 0 || b.Total.Cmp(query.AmountOf(sum)) != 0 {
			bad("immature", a, "BalanceAt says %s of %s immature, the node's coinbase outputs under %d confirmations hold %d of %d", b.Immature, b.Total, utxo.CoinbaseMaturity, immature, sum)
		}
		if v.txs != nil {
			for id := range v.txs[a] {
				if !s.txs[id] {
					bad("transactions", a, "%s is the node's, not the reader's", id)
				}
			}
			for id := range s.txs {
				if !v.txs[a][id] {
					bad("transactions", a, "%s is the reader's, not the node's", id)
				}
			}
		}
	}
	return out, nil
}

// checkWallet holds the wallet's statement to the node: what entered and
// left it less its fees adds up to its addresses' unspent outputs, and an
// internal transaction moves nothing but its fee.
func (c *Checker) checkWallet(v *view) []Violation {
	var out []Violation
	var got query.Amount
	for _, b := range c.blocks {
		txs, err := c.Wallet.Statement(b)
		if err != nil {
			return append(out, Violation{Rule: "wallet", Block: b.Block.Number, Detail: err.Error()})
		}
		for _, tx := range txs {
			got = got.Add(tx.Amount).Sub(tx.Fee)
			if tx.Internal && !tx.Amount.IsZero() {
				out = append(out, Violation{Rule: "wallet", Block: b.Block.Number, Detail: fmt.Sprintf("internal transaction %s moves %s", tx.Tx, tx.Amount)})
			}
		}
	}
	var want int64
	for _, a := range c.Wallet.Addresses() {
		for _, u := range v.unspent[a] {
			want += u.Value
		}
	}
	if got.Cmp(query.AmountOf(want)) != 0 {
		out = append(out, Violation{Rule: "wallet", Block: v.tip, Detail: fmt.Sprintf("the wallet's statement adds up to %s, its addresses' unspent outputs to %d", got, want)})
	}
	return out
}

// CheckDiscovery discovers a fresh wallet of descs with gap limit gap
// through the reader (utxo.Reader.Discover) and compares the addresses
// it finds used with those the gap rule reaches among the addresses that
// have transactions: by btcd's address index, or on Core (which keeps
// none) by the blocks the checker read.
func (c *Checker) CheckDiscovery(ctx context.Context, dialect string, gap int, descs ...*utxo.Descriptor) ([]Violation, error) {
	w, err := utxo.NewWallet(gap, descs...)
	if err != nil {
		return nil, err
	}
	var tip uint64
	if err := c.node.Call(ctx, &tip, "getblockcount"); err != nil {
		return nil, err
	}
	if _, err := c.reader.Discover(ctx, w, 0, tip); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, b := range c.blocks {
		for _, tx := range b.Txs {
			for _, p := range tx.Parties {
				seen[p] = true
			}
		}
	}
	var want []string
	for _, d := range descs {
		for i, last := 0, -1; i <= last+gap; i++ {
			a, err := d.Derive(uint32(i))
			if err != nil {
				return nil, err
			}
			used := seen[a.String]
			if dialect == Btcd {
				v := &view{tip: tip, unspent: map[string][]Coin{}, txs: map[string]map[string]bool{}}
				if err := btcdView(ctx, c.node, c.reader.Network(), a.String, v); err != nil {
					return nil, err
				}
				used = len(v.txs[a.String]) > 0
			}
			if used {
				last = i
				want = append(want, a.String)
			}
		}
	}
	if got := w.Used(); !slices.Equal(got, want) {
		return []Violation{{Rule: "discovery", Block: tip, Detail: fmt.Sprintf("Discover found %v used, the gap rule over the node's history %v", got, want)}}, nil
	}
	return nil, nil
}

// CheckHistory holds the reader's History (btcd's address index) of
// every tracked address to the blocks where the reader found it moved: a
// late subscriber's past is read from exactly those. On Core, which has
// no History, it checks nothing.
func (c *Checker) CheckHistory(ctx context.Context) ([]Violation, error) {
	if len(c.blocks) == 0 {
		return nil, nil
	}
	tip := c.blocks[len(c.blocks)-1].Block.Number
	var out []Violation
	for _, a := range slices.Sorted(maps.Keys(c.tracked)) {
		got, err := c.reader.History(ctx, a, 0, tip)
		if errors.Is(err, chain.ErrNotImplemented) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var want []uint64
		for _, b := range c.blocks {
			if slices.ContainsFunc(b.Moves, func(m chain.Move) bool { return m.Address == a }) {
				want = append(want, b.Block.Number)
			}
		}
		if !slices.Equal(got, want) {
			out = append(out, Violation{Rule: "history", Address: a, Block: tip, Detail: fmt.Sprintf("History says blocks %v, the reader's moves are in %v", got, want)})
		}
	}
	return out, nil
}

// Moved returns the net movement of address's balance in each block the
// checker has read that moved it, by height, from the checker's own
// reading of the blocks (the address must be tracked): what the rows of
// its statement must say, block by block.
func (c *Checker) Moved(address string) map[uint64]query.Amount {
	out := map[uint64]query.Amount{}
	for _, b := range c.blocks {
		var sum query.Amount
		moved := false
		for _, m := range b.Moves {
			if m.Address == address {
				sum, moved = sum.Add(m.Amount), true
			}
		}
		if moved && !sum.IsZero() {
			out[b.Block.Number] = sum
		}
	}
	return out
}
