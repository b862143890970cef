package chaintest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// FakeNamespace is the CAIP-2 namespace of the fake family's chains.
const FakeNamespace = "fake"

// FakeFamily is a chain family in memory: its chains are Fakes, dialled
// by name ("fake://NAME"). It stands in for a node in the core's tests:
// blocks, reorgs, payments with a fee and, when asked, balances at a
// block, all in pure Go.
type FakeFamily struct {
	mu     sync.Mutex
	chains map[string]*Fake
}

var _ chain.Family = (*FakeFamily)(nil)

// Name returns "fake".
func (*FakeFamily) Name() string { return "fake" }

// Namespace returns FakeNamespace.
func (*FakeFamily) Namespace() string { return FakeNamespace }

// Add makes c the chain dialled as fake://name.
func (f *FakeFamily) Add(name string, c *Fake) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.chains == nil {
		f.chains = make(map[string]*Fake)
	}
	f.chains[name] = c
}

// Dial returns the Reader of the chain added as the url's name.
func (f *FakeFamily) Dial(_ context.Context, url string) (chain.Reader, error) {
	name, ok := strings.CutPrefix(url, "fake://")
	if !ok {
		return nil, fmt.Errorf("fake family: url %q: want fake://NAME", url)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.chains[name]
	if !ok {
		return nil, fmt.Errorf("fake family: no chain %q: %w", name, query.ErrUnavailable)
	}
	return c.Reader(), nil
}

// FakeConfig configures a Fake.
type FakeConfig struct {
	// Reference is the CAIP-2 reference of its chain ID; default "1".
	Reference string
	// Alloc is what the genesis block gives each address (of the native
	// coin).
	Alloc map[string]query.Amount
	// Balances makes its Reader a chain.BalanceReader and a
	// chain.HistorySource, as an account chain's.
	Balances bool
	// TipBalances makes its Reader a chain.BalanceReader that tells the
	// balances at the head only, chain.ErrNotImplemented at any other
	// block, as a UTXO node's sum of unspent outputs (and no
	// HistorySource). Balances overrides it.
	TipBalances bool
	// Start is the genesis block's time; a block comes every 12 s after.
	Start time.Time
}

// Fake is a chain in memory. Its methods are safe for concurrent use:
// a test drives it (Pay, Mine, Reorg) while the core reads it.
type Fake struct {
	mu      sync.Mutex
	cfg     FakeConfig
	blocks  []fakeBlock
	pending []fakeTx
	forks   int  // reorgs so far: part of every later block's hash
	down    bool // the node is unreachable
	unseen  []unseenMove
}

// unseenMove is a change of a balance that no movement lists, from block
// on.
type unseenMove struct {
	address, holding string
	block            uint64
	amount           query.Amount
}

type fakeBlock struct {
	block query.Block
	txs   []fakeTx
}

// fakeTx is a payment: amount of a holding from one address to another,
// the fee (native) paid by the sender. A failed one moves only the fee.
type fakeTx struct {
	hash     string
	from, to string
	holding  string
	amount   query.Amount
	fee      query.Amount
	failed   bool
}

// NewFake returns a chain of its genesis block alone.
func NewFake(cfg FakeConfig) *Fake {
	if cfg.Reference == "" {
		cfg.Reference = "1"
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	f := &Fake{cfg: cfg}
	f.blocks = []fakeBlock{{block: query.Block{Number: 0, Hash: f.hash("genesis"), Time: cfg.Start}}}
	return f
}

func (f *Fake) hash(parts ...any) string {
	s := sha256.Sum256([]byte(fmt.Sprint(append([]any{f.cfg.Reference}, parts...)...)))
	return hex.EncodeToString(s[:])
}

// Payment is a transaction a test sends: Amount of Holding ("" for the
// native coin, else a token's holding key) From one address To another,
// the sender paying Fee in the native coin. A Failed payment moves its
// fee only.
type Payment struct {
	From, To string
	Holding  string
	Amount   query.Amount
	Fee      query.Amount
	Failed   bool
}

// Pay queues a payment for the next block Mine makes and returns its
// hash.
func (f *Fake) Pay(p Payment) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := fakeTx{from: p.From, to: p.To, holding: p.Holding, amount: p.Amount, fee: p.Fee, failed: p.Failed}
	t.hash = f.hash("tx", len(f.blocks), len(f.pending), f.forks, p.From, p.To, p.Amount, p.Fee)
	f.pending = append(f.pending, t)
	return t.hash
}

// Mine makes n blocks, the first holding every queued payment, and
// returns the new head.
func (f *Fake) Mine(n int) query.Block {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.mineLocked()
	}
	return f.blocks[len(f.blocks)-1].block
}

func (f *Fake) mineLocked() {
	parent := f.blocks[len(f.blocks)-1].block
	num := parent.Number + 1
	b := fakeBlock{
		block: query.Block{Number: num, ParentHash: parent.Hash, Time: f.cfg.Start.Add(time.Duration(num) * 12 * time.Second)},
		txs:   f.pending,
	}
	f.pending = nil
	b.block.Hash = f.hash("block", num, parent.Hash, f.forks, len(b.txs))
	f.blocks = append(f.blocks, b)
}

// Reorg replaces the newest depth blocks with depth+1 others: their
// payments are mined again, all in the first new block, under hashes
// of their own. It returns the new head.
func (f *Fake) Reorg(depth int) query.Block {
	f.mu.Lock()
	defer f.mu.Unlock()
	depth = min(depth, len(f.blocks)-1)
	var again []fakeTx
	for _, b := range f.blocks[len(f.blocks)-depth:] {
		again = append(again, b.txs...)
	}
	f.blocks = f.blocks[:len(f.blocks)-depth]
	f.forks++
	for i := range again {
		again[i].hash = f.hash("tx", again[i].hash, f.forks)
	}
	f.pending = append(again, f.pending...)
	for range depth + 1 {
		f.mineLocked()
	}
	return f.blocks[len(f.blocks)-1].block
}

// SetDown makes the node unreachable (every read fails with
// query.ErrUnavailable) or reachable again.
func (f *Fake) SetDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

// Unseen makes the node's balance of holding ("" for the native coin) of
// address differ by amount from its movements from the next block Mine
// makes on: a change the family's Activity does not list, which only a
// check against the node's balances can show.
func (f *Fake) Unseen(address, holding string, amount query.Amount) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unseen = append(f.unseen, unseenMove{address: address, holding: holding, block: uint64(len(f.blocks)), amount: amount})
}

// Balance returns what address holds of holding after block number,
// replaying the chain (with the Unseen changes: the node's balance).
func (f *Fake) Balance(address, holding string, number uint64) query.Amount {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.balanceLocked(address, holding, number)
}

func (f *Fake) balanceLocked(address, holding string, number uint64) query.Amount {
	var sum query.Amount
	if holding == "" {
		sum = f.cfg.Alloc[address]
	}
	for _, b := range f.blocks[1:min(uint64(len(f.blocks)), number+1)] {
		for _, m := range f.moves(b) {
			if m.Address == address && m.Holding == holding {
				sum = sum.Add(m.Amount)
			}
		}
	}
	for _, u := range f.unseen {
		if u.address == address && u.holding == holding && u.block <= number {
			sum = sum.Add(u.amount)
		}
	}
	return sum
}

// Reader returns the chain's Reader: a chain.BalanceReader and a
// chain.HistorySource too when FakeConfig.Balances, a BalanceReader at
// the head alone when FakeConfig.TipBalances.
func (f *Fake) Reader() chain.Reader {
	switch {
	case f.cfg.Balances:
		return &fakeAccounts{fakeReader{f}}
	case f.cfg.TipBalances:
		return &fakeTip{fakeReader{f}}
	}
	return &fakeReader{f}
}

// fakeReader is chain.Reader on a Fake.
type fakeReader struct{ f *Fake }

var (
	_ chain.Reader        = (*fakeReader)(nil)
	_ chain.BalanceReader = (*fakeAccounts)(nil)
	_ chain.HistorySource = (*fakeAccounts)(nil)
	_ chain.BalanceReader = (*fakeTip)(nil)
)

func (r *fakeReader) lock() (*Fake, error) {
	r.f.mu.Lock()
	if r.f.down {
		r.f.mu.Unlock()
		return nil, fmt.Errorf("fake node: %w", query.ErrUnavailable)
	}
	return r.f, nil
}

func (r *fakeReader) ChainID(context.Context) (string, error) {
	f, err := r.lock()
	if err != nil {
		return "", err
	}
	defer f.mu.Unlock()
	return FakeNamespace + ":" + f.cfg.Reference, nil
}

func (r *fakeReader) Head(context.Context) (uint64, error) {
	f, err := r.lock()
	if err != nil {
		return 0, err
	}
	defer f.mu.Unlock()
	return uint64(len(f.blocks) - 1), nil
}

func (r *fakeReader) Headers(_ context.Context, from, to uint64) ([]query.Block, error) {
	f, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	var out []query.Block
	for n := from; n <= to && n < uint64(len(f.blocks)); n++ {
		out = append(out, f.blocks[n].block)
	}
	return out, nil
}

func (r *fakeReader) Activity(_ context.Context, q chain.Query) ([]chain.BlockActivity, error) {
	f, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	var out []chain.BlockActivity
	for n := q.From; n <= q.To && n < uint64(len(f.blocks)); n++ {
		b := f.blocks[n]
		a := chain.BlockActivity{Block: b.block}
		for i, t := range b.txs {
			if q.Tracked[t.from] || q.Tracked[t.to] {
				a.Txs = append(a.Txs, f.tx(t, i))
			}
		}
		for _, m := range f.moves(b) {
			if q.Tracked[m.Address] {
				a.Moves = append(a.Moves, m)
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// tx is t in the chain-neutral form, its detail the fake's document.
func (f *Fake) tx(t fakeTx, index int) chain.Tx {
	status := query.StatusSuccess
	if t.failed {
		status = query.StatusFailed
	}
	asset := query.AssetNative
	if t.holding != "" {
		asset = query.AssetERC20
	}
	tr := chain.Transfer{Asset: asset, Holding: t.holding, From: t.from, To: t.to, Amount: t.amount,
		Kind: query.KindTransaction, Ref: "payment"}
	if asset != query.AssetNative {
		tr.Kind = query.KindToken
	}
	if t.failed {
		tr.Error = "failed"
	}
	detail, _ := json.Marshal(map[string]string{"memo": "fake payment " + strconv.Itoa(index)})
	parties := []string{t.from}
	if t.to != t.from {
		parties = append(parties, t.to)
	}
	return chain.Tx{Hash: t.hash, Index: uint(index), Status: status, Payer: t.from, Fee: t.fee,
		Parties: parties, Transfers: []chain.Transfer{tr}, Detail: detail}
}

// moves lists every movement of block b, of every address.
func (f *Fake) moves(b fakeBlock) []chain.Move {
	var out []chain.Move
	add := func(address, holding, kind, tx, ref string, amount query.Amount) {
		if amount.IsZero() {
			return
		}
		asset := query.AssetNative
		if holding != "" {
			asset = query.AssetERC20
		}
		out = append(out, chain.Move{Address: address, Asset: asset, Holding: holding, Kind: kind, Tx: tx, Ref: ref, Amount: amount})
	}
	for _, t := range b.txs {
		add(t.from, "", query.KindFee, t.hash, "fee", t.fee.Neg())
		if t.failed {
			continue
		}
		kind := query.KindTransaction
		if t.holding != "" {
			kind = query.KindToken
		}
		add(t.from, t.holding, kind, t.hash, "payment", t.amount.Neg())
		add(t.to, t.holding, kind, t.hash, "payment", t.amount)
	}
	return out
}

// fakeAccounts is the Reader of a Fake with balances.
type fakeAccounts struct{ fakeReader }

func (r *fakeAccounts) Balances(_ context.Context, block uint64, queries []query.BalanceQuery) ([]query.Balance, error) {
	f, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	if block >= uint64(len(f.blocks)) {
		return nil, fmt.Errorf("fake node: no block %d: %w", block, query.ErrNotFound)
	}
	return f.balancesLocked(block, queries), nil
}

// fakeTip is the Reader of a Fake with balances at its head alone.
type fakeTip struct{ fakeReader }

func (r *fakeTip) Balances(_ context.Context, block uint64, queries []query.BalanceQuery) ([]query.Balance, error) {
	f, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	if head := uint64(len(f.blocks) - 1); block != head {
		return nil, fmt.Errorf("fake node: balances at block %d, not the head %d: %w", block, head, chain.ErrNotImplemented)
	}
	return f.balancesLocked(block, queries), nil
}

// balancesLocked is what queries ask at block, which the chain has.
func (f *Fake) balancesLocked(block uint64, queries []query.BalanceQuery) []query.Balance {
	out := make([]query.Balance, len(queries))
	for i, q := range queries {
		asset := query.AssetNative
		if q.Contract != "" {
			asset = query.AssetERC20
		}
		out[i] = query.Balance{Address: q.Address, Asset: asset, Contract: q.Contract, Block: block,
			Amount: f.balanceLocked(q.Address, q.Contract, block)}
	}
	return out
}

func (r *fakeAccounts) History(_ context.Context, address string, from, to uint64) ([]uint64, error) {
	f, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	var out []uint64
	for n := from; n <= to && n < uint64(len(f.blocks)); n++ {
		for _, t := range f.blocks[n].txs {
			if t.from == address || t.to == address {
				out = append(out, n)
				break
			}
		}
	}
	return out, nil
}
