package fetch_test

import (
	"context"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/fetch"
)

// idle is the i-th address no block touches.
func idle(i int) common.Address { return common.BigToAddress(big.NewInt(int64(1000 + i))) }

// TestRefreshFastChain: with a new block before every step (a chain
// faster than the fetcher's steps), every tracked address's balances are
// still read again within the refresh interval, a slice per step.
func TestRefreshFastChain(t *testing.T) {
	ctx := context.Background()
	clk := testenv.NewClock(time.Now())
	const interval = time.Minute
	e := newEnv(t, testenv.SQLite(t), fetch.Config{Clock: clk, RefreshInterval: interval, RefreshBatch: 7})
	// 40 tracked addresses that no block touches, and one that blocks do.
	for i := range 40 {
		e.subscribe(idle(i))
	}
	e.subscribe(e.dev.Accounts[0])
	e.fetch()
	for step := range 30 {
		if _, err := e.dev.Step(ctx); err != nil {
			t.Fatal(err)
		}
		clk.Advance(5 * time.Second)
		e.fetch()
		if step < 15 {
			continue // the first rounds take their steps
		}
		now := clk.Now()
		for i := range 40 {
			a := idle(i)
			bals, err := e.db.Balances(ctx, chain, addr(a))
			if err != nil || len(bals) == 0 {
				t.Fatalf("balances of %s: %v %v", addr(a), bals, err)
			}
			if age := now.Sub(bals[0].Updated); age > interval {
				t.Fatalf("step %d: the balance of %s is %s old, over the refresh interval %s", step, addr(a), age, interval)
			}
		}
	}
}

// TestNodeLagFastChain: the lag check applies while every step stores
// new blocks: a node whose newest block is old is reported.
func TestNodeLagFastChain(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, testenv.SQLite(t), fetch.Config{Clock: testenv.NewClock(time.Now().Add(2 * time.Hour)), LagAfter: time.Hour})
	e.subscribe(e.dev.Accounts[0])
	e.fetch()
	for range 3 {
		if _, err := e.dev.Step(ctx); err != nil {
			t.Fatal(err)
		}
		e.fetch()
		err := e.f.Health()
		if err == nil || !strings.Contains(err.Error(), "lags") {
			t.Fatalf("Health after a step that stored blocks 2 h old = %v, want the node lagging", err)
		}
	}
}

// stalledBalances is a fault injected in front of the real dev chain: its
// balance reads of the idle addresses (which only the scheduled refresh
// asks for once they are synced) hang until released, as a node
// overloaded by balance reads would; the rest goes to the node.
type stalledBalances struct {
	query.Source
	idle     map[string]bool
	entered  chan struct{}
	once     sync.Once
	release  chan struct{}
	released atomic.Bool
}

func (s *stalledBalances) Balances(ctx context.Context, block uint64, qs []query.BalanceQuery) ([]query.Balance, error) {
	for _, q := range qs {
		if s.idle[q.Address] && !s.released.Load() {
			s.once.Do(func() { close(s.entered) })
			select {
			case <-s.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			break
		}
	}
	return s.Source.Balances(ctx, block, qs)
}

// TestRefreshBesideHead: under Run the refresh reads beside the head
// follower. While its balance reads hang, new blocks are stored all the
// same; released, every tracked address is read again within the
// interval.
func TestRefreshBesideHead(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const interval = 400 * time.Millisecond
	e := newEnv(t, testenv.SQLite(t), fetch.Config{Interval: 5 * time.Millisecond, RefreshInterval: interval, RefreshBatch: 7})
	src := &stalledBalances{Source: e.src, idle: make(map[string]bool), entered: make(chan struct{}), release: make(chan struct{})}
	for i := range 20 {
		e.subscribe(idle(i))
		src.idle[addr(idle(i))] = true
	}
	e.subscribe(e.dev.Accounts[0])
	e.fetch() // synced: their balances read
	e.useSource(src, fetch.InternalsAuto)
	done := make(chan error, 1)
	go func() { done <- e.f.Run(ctx) }()
	deadline := time.After(30 * time.Second)
	select {
	case <-src.entered: // a refresh read hangs
	case <-deadline:
		t.Fatal("the refresh never read the idle addresses")
	}
	for range 5 {
		if _, err := e.dev.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	head, _ := e.dev.Head()
	e.waitStored(head, deadline, "a hanging refresh read")
	released := time.Now()
	src.released.Store(true)
	close(src.release)
	for i := 0; i < 20; {
		bals, err := e.db.Balances(ctx, chain, addr(idle(i)))
		if err != nil || len(bals) == 0 {
			t.Fatalf("balances of %s: %v %v", addr(idle(i)), bals, err)
		}
		if bals[0].Updated.After(released) {
			i++
			continue
		}
		select {
		case <-deadline:
			t.Fatalf("%s not read again since the release (last %s)", addr(idle(i)), bals[0].Updated)
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
