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
	for _, balances := range []bool{false, true} {
		t.Run(fmt.Sprint("balances=", balances), func(t *testing.T) {
			chaintest.Run(t, chaintest.Config{Namespace: chaintest.FakeNamespace, New: func(t *testing.T) chaintest.Chain {
				f := chaintest.NewFake(chaintest.FakeConfig{Balances: balances,
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
