package query_test

import (
	"context"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
)

// idle is the i-th address no block touches.
func idle(i int) common.Address { return common.BigToAddress(big.NewInt(int64(1000 + i))) }

// testClock is a testenv.Clock a fetcher can run on: FetchOnce never
// waits.
type testClock struct{ *testenv.Clock }

func (testClock) After(time.Duration) <-chan time.Time { return nil }

// TestRefreshFastChain: with a new block before every step (a chain
// faster than the fetcher's steps), every tracked address's balances are
// still read again within the refresh interval, a slice per step.
func TestRefreshFastChain(t *testing.T) {
	ctx := context.Background()
	clk := testClock{testenv.NewClock(time.Now())}
	const interval = time.Minute
	e := newEnv(t, backends[0].dsn(t), query.FetcherConfig{Clock: clk, RefreshInterval: interval, RefreshBatch: 7})
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
	e := newEnv(t, backends[0].dsn(t), query.FetcherConfig{Clock: laterClock{2 * time.Hour}, LagAfter: time.Hour})
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
