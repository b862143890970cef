package api_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/api"
)

// recordingStore records the store reads the API makes.
type recordingStore struct {
	query.Store
	mu    sync.Mutex
	calls []string
}

func (s *recordingStore) record(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, name)
}

func (s *recordingStore) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}

func (s *recordingStore) Authenticate(ctx context.Context, id, secret string) (query.Account, error) {
	s.record("Authenticate")
	return s.Store.Authenticate(ctx, id, secret)
}

func (s *recordingStore) Subscribed(ctx context.Context, account int64, chain string, addresses ...string) (bool, error) {
	s.record("Subscribed")
	return s.Store.Subscribed(ctx, account, chain, addresses...)
}

func (s *recordingStore) Subscription(ctx context.Context, account int64, chain, address string) (query.Subscription, error) {
	s.record("Subscription")
	return s.Store.Subscription(ctx, account, chain, address)
}

func (s *recordingStore) AccountBalances(ctx context.Context, account int64, chain, address string) ([]query.Balance, error) {
	s.record("AccountBalances")
	return s.Store.AccountBalances(ctx, account, chain, address)
}

func (s *recordingStore) AccountTransactions(ctx context.Context, account int64, chain, address string, after *query.TxCursor, limit int) ([]query.Transaction, error) {
	s.record("AccountTransactions")
	return s.Store.AccountTransactions(ctx, account, chain, address, after, limit)
}

func (s *recordingStore) AccountBalanceChanges(ctx context.Context, account int64, chain, address string, after *query.ChangeCursor, limit int) ([]query.BalanceChange, error) {
	s.record("AccountBalanceChanges")
	return s.Store.AccountBalanceChanges(ctx, account, chain, address, after, limit)
}

func (s *recordingStore) SubscriptionBalances(ctx context.Context, account int64, chain, address string) (query.Subscription, []query.Balance, error) {
	s.record("SubscriptionBalances")
	return s.Store.SubscriptionBalances(ctx, account, chain, address)
}

func (s *recordingStore) SubscriptionTransactions(ctx context.Context, account int64, chain, address string, after *query.TxCursor, limit int) (query.Subscription, []query.Transaction, error) {
	s.record("SubscriptionTransactions")
	return s.Store.SubscriptionTransactions(ctx, account, chain, address, after, limit)
}

func (s *recordingStore) SubscriptionBalanceChanges(ctx context.Context, account int64, chain, address string, after *query.ChangeCursor, limit int) (query.Subscription, []query.BalanceChange, error) {
	s.record("SubscriptionBalanceChanges")
	return s.Store.SubscriptionBalanceChanges(ctx, account, chain, address, after, limit)
}

func (s *recordingStore) SubscriptionTransactionsFunc(ctx context.Context, account int64, chain, address string, after *query.TxCursor, limit int, fn func(*query.Transaction, bool) error) (query.Subscription, error) {
	s.record("SubscriptionTransactionsFunc")
	return s.Store.SubscriptionTransactionsFunc(ctx, account, chain, address, after, limit, fn)
}

func (s *recordingStore) SubscriptionBalanceChangesFunc(ctx context.Context, account int64, chain, address string, after *query.ChangeCursor, limit int, fn func(*query.BalanceChange) error) (query.Subscription, error) {
	s.record("SubscriptionBalanceChangesFunc")
	return s.Store.SubscriptionBalanceChangesFunc(ctx, account, chain, address, after, limit, fn)
}

func (s *recordingStore) SubscriptionChangeRange(ctx context.Context, account int64, chain, address string, r query.Range, after *query.ChangeCursor, limit, budget int) (query.Subscription, query.ChangeRange, error) {
	s.record("SubscriptionChangeRange")
	return s.Store.SubscriptionChangeRange(ctx, account, chain, address, r, after, limit, budget)
}

func (s *recordingStore) SubscriptionChangeRangeFunc(ctx context.Context, account int64, chain, address string, r query.Range, after *query.ChangeCursor, limit, budget int, fn func(*query.BalanceChange, query.Label) error) (query.Subscription, *query.ChangeCursor, error) {
	s.record("SubscriptionChangeRangeFunc")
	return s.Store.SubscriptionChangeRangeFunc(ctx, account, chain, address, r, after, limit, budget, fn)
}

func (s *recordingStore) SubscriptionTxRange(ctx context.Context, account int64, chain, address string, r query.Range, after *query.TxCursor, limit, budget int) (query.Subscription, query.TxRange, error) {
	s.record("SubscriptionTxRange")
	return s.Store.SubscriptionTxRange(ctx, account, chain, address, r, after, limit, budget)
}

func (s *recordingStore) SubscriptionBalancesAt(ctx context.Context, account int64, chain, address string, block uint64, at time.Time) (query.Subscription, []query.AsOf, query.Block, error) {
	s.record("SubscriptionBalancesAt")
	return s.Store.SubscriptionBalancesAt(ctx, account, chain, address, block, at)
}

func (s *recordingStore) Head(ctx context.Context, chain string) (query.Block, bool, error) {
	s.record("Head")
	return s.Store.Head(ctx, chain)
}

func (s *recordingStore) Secret(ctx context.Context, name string) ([]byte, error) {
	s.record("Secret")
	return s.Store.Secret(ctx, name)
}

// TestReadStoreCalls: a read of an address's data costs two store reads,
// the key check and one read that tells the subscription's state with
// the data (a lookup of the state of its own made every read a third
// slower), once the page-token key and the stored head are cached.
func TestReadStoreCalls(t *testing.T) {
	var rec *recordingStore
	e := newEnvWith(t, filepath.Join(t.TempDir(), "addrd.db"), func(cfg *api.Config) {
		rec = &recordingStore{Store: cfg.Store}
		cfg.Store = rec
		// A clock that stands still: the stored head, cached for a
		// second, stays cached however slow the machine.
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		cfg.Now = func() time.Time { return now }
	})
	path := "/v1/chains/ETH/addresses/" + addrA
	e.want(e.do("PUT", path, e.alice), 200, 0)
	e.cover(addrA)
	for _, c := range []struct{ read, store string }{
		{"/balances", "SubscriptionBalances"},
		{"/transactions", "SubscriptionTransactionsFunc"},
		{"/balance_changes", "SubscriptionChangeRangeFunc"},
		{"/balance_changes?start_block=0&end_block=10&order_by=block_number&kind=fee&contract=" + addrB, "SubscriptionChangeRangeFunc"},
		{"/transactions?start_time=2026-01-01T00:00:00Z&kind=token", "SubscriptionTxRange"},
		{"/balances?block_number=0", "SubscriptionBalancesAt"},
	} {
		e.want(e.do("GET", path+c.read, e.alice), 200, 0) // fills the caches
		rec.take()
		r := e.do("GET", path+c.read, e.alice)
		e.want(r, 200, 0)
		if got, want := rec.take(), []string{"Authenticate", c.store}; !slices.Equal(got, want) {
			t.Errorf("GET %s: store reads %v, want %v", c.read, got, want)
		}
		if r.header.Get("Addrd-Subscription-State") != query.StateActive || r.header.Get("Addrd-History-Start-Block") != "0" {
			t.Errorf("GET %s: state headers %v", c.read, r.header)
		}
	}
}
