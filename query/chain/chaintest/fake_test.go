package chaintest_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/chain/chaintest"
)

// fakeChain drives a Fake for the contract.
type fakeChain struct {
	fake  *chaintest.Fake
	fresh atomic.Int64
}

func (c *fakeChain) Reader() chain.Reader { return c.fake.Reader() }
func (c *fakeChain) Payer() string        { return "payer" }
func (c *fakeChain) Fresh() string        { return fmt.Sprint("fresh-", c.fresh.Add(1)) }

func (c *fakeChain) Pay(_ context.Context, from, to string, amount query.Amount) (string, uint64, error) {
	h := c.fake.Pay(chaintest.Payment{From: from, To: to, Amount: amount, Fee: query.AmountOf(21)})
	return h, c.fake.Mine(1).Number, nil
}

func (c *fakeChain) Reorg(_ context.Context, depth int) error {
	c.fake.Reorg(depth)
	return nil
}

func TestFakeContract(t *testing.T) {
	for _, c := range []struct{ balances, tip bool }{{}, {balances: true}, {tip: true}} {
		t.Run(fmt.Sprintf("balances=%v/tip=%v", c.balances, c.tip), func(t *testing.T) {
			chaintest.Run(t, chaintest.Config{Namespace: chaintest.FakeNamespace, New: func(t *testing.T) chaintest.Chain {
				f := chaintest.NewFake(chaintest.FakeConfig{Balances: c.balances, TipBalances: c.tip,
					Alloc: map[string]query.Amount{"payer": query.AmountOf(1_000_000_000_000)}})
				f.Mine(2)
				return &fakeChain{fake: f}
			}})
		})
	}
}

func TestFakeFamilyDial(t *testing.T) {
	var fam chaintest.FakeFamily
	fam.Add("one", chaintest.NewFake(chaintest.FakeConfig{Reference: "7"}))
	r, err := fam.Dial(t.Context(), "fake://one")
	if err != nil {
		t.Fatal(err)
	}
	if id, err := r.ChainID(t.Context()); err != nil || id != "fake:7" {
		t.Fatalf("ChainID = %q, %v; want fake:7", id, err)
	}
	for _, url := range []string{"fake://two", "http://one"} {
		if _, err := fam.Dial(t.Context(), url); err == nil {
			t.Errorf("Dial(%q) = nil error", url)
		}
	}
}

// TestFakeBalances: the Fake's balances are its movements' sum plus the
// Unseen changes, at every block with Balances and at the head alone
// with TipBalances.
func TestFakeBalances(t *testing.T) {
	ctx := t.Context()
	q := []query.BalanceQuery{{Address: "bob"}}
	for _, tip := range []bool{false, true} {
		f := chaintest.NewFake(chaintest.FakeConfig{Balances: !tip, TipBalances: tip})
		f.Pay(chaintest.Payment{From: "alice", To: "bob", Amount: query.AmountOf(100), Fee: query.AmountOf(1)})
		f.Mine(1)
		f.Unseen("bob", "", query.AmountOf(7))
		head := f.Mine(1).Number
		br := f.Reader().(chain.BalanceReader)
		got, err := br.Balances(ctx, head, q)
		if err != nil || len(got) != 1 || got[0].Amount.Cmp(query.AmountOf(107)) != 0 {
			t.Fatalf("tip=%v: bob at the head %d: %v, %v; want 107", tip, head, got, err)
		}
		got, err = br.Balances(ctx, head-1, q)
		switch {
		case tip && !errors.Is(err, chain.ErrNotImplemented):
			t.Errorf("TipBalances: bob at block %d below the head: %v, %v; want ErrNotImplemented", head-1, got, err)
		case !tip && (err != nil || got[0].Amount.Cmp(query.AmountOf(100)) != 0):
			t.Errorf("Balances: bob at block %d: %v, %v; want 100", head-1, got, err)
		}
		if _, ok := f.Reader().(chain.HistorySource); ok == tip {
			t.Errorf("tip=%v: the Reader is a HistorySource: %v", tip, ok)
		}
	}
}

func TestFakeDown(t *testing.T) {
	f := chaintest.NewFake(chaintest.FakeConfig{})
	f.SetDown(true)
	if _, err := f.Reader().Head(t.Context()); !errors.Is(err, query.ErrUnavailable) {
		t.Fatalf("Head of a node down: %v, want ErrUnavailable", err)
	}
	f.SetDown(false)
	if _, err := f.Reader().Head(t.Context()); err != nil {
		t.Fatal(err)
	}
}
