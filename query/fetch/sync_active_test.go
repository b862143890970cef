package fetch_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/fetch"
)

// activeWatch is a store that, after every write that can change a
// subscription's state, reads the watched subscription as a client would
// and keeps the balances listed the first time it reads ACTIVE.
type activeWatch struct {
	fetch.Store
	e        *env
	address  string
	balances map[string]string // nil until ACTIVE is read
}

// look reads the subscription and, the first time it is ACTIVE, its balances.
func (w *activeWatch) look(ctx context.Context) {
	if w.balances != nil {
		return
	}
	sub, err := w.e.db.Subscription(ctx, w.e.account, chain, w.address)
	if err != nil {
		w.e.t.Fatal(err)
	}
	if sub.State != query.StateActive {
		return
	}
	bals, err := w.e.db.Balances(ctx, chain, w.address)
	if err != nil {
		w.e.t.Fatal(err)
	}
	w.balances = make(map[string]string)
	for _, b := range bals {
		w.balances[b.Asset+b.Contract] = b.Amount.String()
	}
}

func (w *activeWatch) MarkSynced(ctx context.Context, chain string, addresses []string, block, low uint64) error {
	err := w.Store.MarkSynced(ctx, chain, addresses, block, low)
	w.look(ctx)
	return err
}

func (w *activeWatch) StoreBackfill(ctx context.Context, chain string, job query.BackfillJob, txs []query.Transaction, changes []query.BalanceChange, next int64) error {
	err := w.Store.StoreBackfill(ctx, chain, job, txs, changes, next)
	w.look(ctx)
	return err
}

func (w *activeWatch) BalancesStored(ctx context.Context, chain string, addresses []string, block uint64) error {
	err := w.Store.BalancesStored(ctx, chain, addresses, block)
	w.look(ctx)
	return err
}

// TestActiveHasBalances subscribes an address holding a token the store
// has never seen (the backfill finds it) and steps the fetcher until the
// subscription reads ACTIVE: at that moment its balances already list the
// token, with the node's balance, beside the native one.
func TestActiveHasBalances(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		e := newEnv(t, dsn, fetch.Config{BackfillBlocks: 1000})
		x := e.dev.Accounts[3] // holds the demo token from its distribution
		for range 3 {
			e.dev.Commit()
		}
		w := &activeWatch{Store: e.db, e: e, address: addr(x)}
		e.newFetcher(w)
		e.subscribe(x)
		for i := 0; w.balances == nil; i++ {
			if i == 10 {
				t.Fatal("the subscription is not ACTIVE after 10 steps")
			}
			e.fetch()
			w.look(ctx)
		}
		token := query.AssetERC20 + addr(e.dev.Token)
		want := map[string]string{query.AssetNative: e.nodeBalance(x, ""), token: e.nodeBalance(x, addr(e.dev.Token))}
		for k, v := range want {
			if w.balances[k] != v {
				t.Errorf("when ACTIVE was first read, balance %s = %q, want the node's %s (balances listed: %v)", k, w.balances[k], v, w.balances)
			}
		}
		// The feed tells ACTIVE once, after SYNCING.
		p, err := e.db.AccountEvents(ctx, e.account, -1, query.EventFilter{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var states []string
		for _, ev := range p.Events {
			if ev.Kind == query.EventSubscriptionState && ev.Address == addr(x) {
				states = append(states, ev.Data)
			}
		}
		if n := len(states); n == 0 || !strings.Contains(states[n-1], `"state":"ACTIVE"`) || strings.Count(strings.Join(states, ""), `"ACTIVE"`) != 1 {
			t.Errorf("subscription_state events %v, want one ACTIVE, the last", states)
		}
		// And afterwards, as before.
		got := e.balances(x)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("balance %s = %q, want %s", k, got[k], v)
			}
		}
	})
}

// lostBalances is a store whose process is killed right after a
// backfill's last slice is stored, before the balances of the tokens it
// found are read.
type lostBalances struct{ fetch.Store }

func (s lostBalances) StoreBackfill(ctx context.Context, chain string, job query.BackfillJob, txs []query.Transaction, changes []query.BalanceChange, next int64) error {
	if err := s.Store.StoreBackfill(ctx, chain, job, txs, changes, next); err != nil || next >= int64(job.Low) {
		return err
	}
	return errCrash
}

// TestActiveAfterRestart: a fetcher killed after a backfill ended and
// before it recorded the balances stored leaves the subscription SYNCING;
// the next process reads the balances of the tokens the backfill found
// (from the statement's rows) and only then makes it ACTIVE.
func TestActiveAfterRestart(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		e := newEnv(t, dsn, fetch.Config{BackfillBlocks: 1000})
		x := e.dev.Accounts[3]
		for range 3 {
			e.dev.Commit()
		}
		e.newFetcher(lostBalances{e.db})
		e.subscribe(x)
		for range 3 {
			if err := e.f.FetchOnce(ctx); err != nil && !errors.Is(err, errCrash) {
				t.Fatal(err)
			}
		}
		if sub, err := e.db.Subscription(ctx, e.account, chain, addr(x)); err != nil || sub.State != query.StateSyncing {
			t.Fatalf("subscription %+v, %v before the balances are recorded stored, want SYNCING", sub, err)
		}
		w := &activeWatch{Store: e.db, e: e, address: addr(x)}
		e.newFetcher(w)
		for i := 0; w.balances == nil; i++ {
			if i == 10 {
				t.Fatal("the subscription is not ACTIVE after 10 steps of the restarted fetcher")
			}
			e.fetch()
			w.look(ctx)
		}
		token := query.AssetERC20 + addr(e.dev.Token)
		if got, want := w.balances[token], e.nodeBalance(x, addr(e.dev.Token)); got != want {
			t.Errorf("when ACTIVE was first read, balance %s = %q, want the node's %s (balances listed: %v)", token, got, want, w.balances)
		}
	})
}
