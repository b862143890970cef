// Package chaintest is the contract every chain family passes, as every
// publish.Store passes publish/storetest, and a fake family in pure Go
// (FakeFamily) that passes it, for the core's tests that need no node.
package chaintest

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"testing"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// Chain is a chain under test: its Reader and the means to make blocks
// on it.
type Chain interface {
	// Reader is the family's Reader of the chain.
	Reader() chain.Reader
	// Payer returns a funded address that can pay.
	Payer() string
	// Fresh returns an address no one has used.
	Fresh() string
	// Pay sends amount of the native coin from payer to the address to
	// and waits until a block holds it: its hash and block number.
	Pay(ctx context.Context, from, to string, amount query.Amount) (hash string, block uint64, err error)
	// Reorg replaces the newest depth blocks with others; an error
	// wrapping chain.ErrNotImplemented where the chain cannot.
	Reorg(ctx context.Context, depth int) error
}

// Config says what the contract runs on.
type Config struct {
	// Namespace is the family's CAIP-2 namespace (Family.Namespace).
	Namespace string
	// New returns a chain under test; it stops with the test.
	New func(t *testing.T) Chain
}

// caip2 is a CAIP-2 chain ID.
var caip2 = regexp.MustCompile(`^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$`)

// Run runs the contract: a family's Reader must pass every subtest.
func Run(t *testing.T, cfg Config) {
	t.Run("ChainID", func(t *testing.T) { testChainID(t, cfg) })
	t.Run("Headers", func(t *testing.T) { testHeaders(t, cfg) })
	t.Run("Payment", func(t *testing.T) { testPayment(t, cfg) })
	t.Run("Untracked", func(t *testing.T) { testUntracked(t, cfg) })
	t.Run("Reorg", func(t *testing.T) { testReorg(t, cfg) })
}

func testChainID(t *testing.T, cfg Config) {
	c := cfg.New(t)
	ctx := t.Context()
	id, err := c.Reader().ChainID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !caip2.MatchString(id) {
		t.Fatalf("ChainID = %q, not a CAIP-2 chain ID", id)
	}
	if ns, _, _ := cutColon(id); ns != cfg.Namespace {
		t.Fatalf("ChainID = %q, want the namespace %q", id, cfg.Namespace)
	}
	again, err := c.Reader().ChainID(ctx)
	if err != nil || again != id {
		t.Fatalf("ChainID again = %q, %v; want %q", again, err, id)
	}
}

func cutColon(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == ':' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func testHeaders(t *testing.T, cfg Config) {
	c := cfg.New(t)
	ctx := t.Context()
	if _, _, err := c.Pay(ctx, c.Payer(), c.Fresh(), query.AmountOf(1)); err != nil {
		t.Fatal(err)
	}
	r := c.Reader()
	head, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if head == 0 {
		t.Fatal("Head = 0 after a payment was mined")
	}
	from := head - min(head, 8)
	hs, err := r.Headers(ctx, from, head+5)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) < int(head-from+1) {
		t.Fatalf("Headers(%d, %d) with head %d: %d headers", from, head+5, head, len(hs))
	}
	linked(t, hs, from)
	if hs, err := r.Headers(ctx, head+100, head+200); err != nil || len(hs) != 0 {
		t.Fatalf("Headers beyond the head = %d headers, %v; want none", len(hs), err)
	}
}

// linked fails unless hs are numbered from first on, each the parent of
// the next.
func linked(t *testing.T, hs []query.Block, first uint64) {
	t.Helper()
	for i, h := range hs {
		if h.Number != first+uint64(i) {
			t.Fatalf("header %d is block %d, want %d", i, h.Number, first+uint64(i))
		}
		if h.Hash == "" {
			t.Fatalf("block %d has no hash", h.Number)
		}
		if i > 0 && h.ParentHash != hs[i-1].Hash {
			t.Fatalf("block %d's parent %s is not block %d (%s)", h.Number, h.ParentHash, hs[i-1].Number, hs[i-1].Hash)
		}
	}
}

func testPayment(t *testing.T, cfg Config) {
	c := cfg.New(t)
	ctx := t.Context()
	r := c.Reader()
	from, to := c.Payer(), c.Fresh()
	amount := query.AmountOf(123456789)
	hash, number, err := c.Pay(ctx, from, to, amount)
	if err != nil {
		t.Fatal(err)
	}
	tracked := map[string]bool{from: true, to: true}
	acts, err := r.Activity(ctx, chain.Query{From: number - 1, To: number, Tracked: tracked, Pass: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 2 {
		t.Fatalf("Activity(%d, %d) = %d blocks, want 2", number-1, number, len(acts))
	}
	blocks := []query.Block{acts[0].Block, acts[1].Block}
	linked(t, blocks, number-1)
	hs, err := r.Headers(ctx, number-1, number)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(hs, blocks) {
		t.Fatalf("Activity's blocks %+v, Headers' %+v", blocks, hs)
	}
	a := acts[1]
	i := slices.IndexFunc(a.Txs, func(x chain.Tx) bool { return x.Hash == hash })
	if i < 0 {
		t.Fatalf("block %d's activity lists no transaction %s: %+v", number, hash, a.Txs)
	}
	tx := a.Txs[i]
	if tx.Status != query.StatusSuccess {
		t.Errorf("status %q, want %q", tx.Status, query.StatusSuccess)
	}
	if tx.Payer != from {
		t.Errorf("payer %q, want %q", tx.Payer, from)
	}
	if tx.Fee.Sign() < 0 {
		t.Errorf("fee %s is negative", tx.Fee)
	}
	if !slices.Contains(tx.Parties, from) || !slices.Contains(tx.Parties, to) {
		t.Errorf("parties %v miss %s or %s", tx.Parties, from, to)
	}
	if len(tx.Detail) > 0 && !json.Valid(tx.Detail) {
		t.Errorf("detail %q is not JSON", tx.Detail)
	}
	got := sums(a.Moves)
	if g := got[to]; g.Cmp(amount) != 0 {
		t.Errorf("the recipient's moves sum to %s, want %s: %+v", g, amount, a.Moves)
	}
	for _, m := range a.Moves {
		if !tracked[m.Address] {
			t.Errorf("a move of the untracked %s: %+v", m.Address, m)
		}
		if m.Kind == "" || m.Amount.IsZero() {
			t.Errorf("a move without kind or amount: %+v", m)
		}
	}
	if tx.Fee.Sign() > 0 && !slices.ContainsFunc(a.Moves, func(m chain.Move) bool {
		return m.Address == from && m.Kind == query.KindFee && m.Tx == hash && m.Amount.Cmp(tx.Fee.Neg()) == 0
	}) {
		t.Errorf("no fee move of %s for %s: %+v", tx.Fee, from, a.Moves)
	}
	balances(t, r, number, a.Moves, from, to)
	history(t, r, to, number)
}

// sums adds the native moves of each address.
func sums(ms []chain.Move) map[string]query.Amount {
	out := make(map[string]query.Amount)
	for _, m := range ms {
		if m.Holding == "" {
			out[m.Address] = out[m.Address].Add(m.Amount)
		}
	}
	return out
}

// balances checks, where the Reader reads balances, that each address's
// balance after block number is its balance before plus its moves. A
// Reader that tells balances at its head only (chain.ErrNotImplemented
// before it, as a UTXO node's unspent outputs) must tell them there.
func balances(t *testing.T, r chain.Reader, number uint64, moves []chain.Move, addresses ...string) {
	t.Helper()
	br, ok := r.(chain.BalanceReader)
	if !ok {
		return
	}
	ctx := t.Context()
	qs := make([]query.BalanceQuery, len(addresses))
	for i, a := range addresses {
		qs[i] = query.BalanceQuery{Address: a}
	}
	before, err := br.Balances(ctx, number-1, qs)
	if errors.Is(err, chain.ErrNotImplemented) {
		head, err := r.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		at, err := br.Balances(ctx, head, qs)
		if err != nil {
			t.Fatalf("Balances at the head %d: %v (and %v before block %d)", head, err, chain.ErrNotImplemented, number)
		}
		if len(at) != len(qs) {
			t.Fatalf("Balances at the head %d: %d balances for %d queries", head, len(at), len(qs))
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	after, err := br.Balances(ctx, number, qs)
	if err != nil {
		t.Fatal(err)
	}
	sum := sums(moves)
	for i, a := range addresses {
		if want := before[i].Amount.Add(sum[a]); after[i].Amount.Cmp(want) != 0 {
			t.Errorf("%s holds %s after block %d, %s before, moves %s: want %s", a, after[i].Amount, number, before[i].Amount, sum[a], want)
		}
	}
}

// history checks, where the Reader has a history source, that it finds
// the block of address's payment.
func history(t *testing.T, r chain.Reader, address string, number uint64) {
	t.Helper()
	hs, ok := r.(chain.HistorySource)
	if !ok {
		return
	}
	blocks, err := hs.History(t.Context(), address, 0, number)
	if errors.Is(err, chain.ErrNotImplemented) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(blocks, number) {
		t.Errorf("History(%s, 0, %d) = %v, misses block %d", address, number, blocks, number)
	}
	if !slices.IsSorted(blocks) {
		t.Errorf("History = %v, not ascending", blocks)
	}
}

func testUntracked(t *testing.T, cfg Config) {
	c := cfg.New(t)
	ctx := t.Context()
	_, number, err := c.Pay(ctx, c.Payer(), c.Fresh(), query.AmountOf(7))
	if err != nil {
		t.Fatal(err)
	}
	other := c.Fresh()
	for _, tracked := range []map[string]bool{nil, {other: true}} {
		acts, err := c.Reader().Activity(ctx, chain.Query{From: number, To: number, Tracked: tracked, Pass: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if len(acts) != 1 || acts[0].Block.Number != number {
			t.Fatalf("Activity(%d, %d) tracking %v = %d blocks, want block %d", number, number, tracked, len(acts), number)
		}
		if len(acts[0].Txs) != 0 || len(acts[0].Moves) != 0 {
			t.Errorf("tracking %v, block %d lists %d transactions and %d moves, want none", tracked, number, len(acts[0].Txs), len(acts[0].Moves))
		}
	}
}

func testReorg(t *testing.T, cfg Config) {
	c := cfg.New(t)
	ctx := t.Context()
	r := c.Reader()
	from, to := c.Payer(), c.Fresh()
	_, number, err := c.Pay(ctx, from, to, query.AmountOf(99))
	if err != nil {
		t.Fatal(err)
	}
	old, err := r.Headers(ctx, number, number)
	if err != nil || len(old) != 1 {
		t.Fatalf("Headers(%d) = %v, %v", number, old, err)
	}
	head, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Reorg(ctx, int(head-number+1)); errors.Is(err, chain.ErrNotImplemented) {
		t.Skip("the chain under test cannot reorg:", err)
	} else if err != nil {
		t.Fatal(err)
	}
	now, err := r.Headers(ctx, number-1, number)
	if err != nil || len(now) != 2 {
		t.Fatalf("Headers(%d, %d) after the reorg = %v, %v", number-1, number, now, err)
	}
	if now[1].Hash == old[0].Hash {
		t.Fatalf("block %d is %s before and after the reorg", number, old[0].Hash)
	}
	newHead, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	acts, err := r.Activity(ctx, chain.Query{From: number - 1, To: newHead, Tracked: map[string]bool{from: true, to: true}, Pass: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) < 2 || acts[1].Block.Hash != now[1].Hash {
		t.Fatalf("Activity after the reorg does not read the new block %d %s", number, now[1].Hash)
	}
	var blocks []query.Block
	for _, a := range acts {
		blocks = append(blocks, a.Block)
	}
	linked(t, blocks, number-1)
	for _, a := range acts[1:] {
		balances(t, r, a.Block.Number, a.Moves, from, to)
	}
}
