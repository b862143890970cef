package fetch_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
)

// TestLeaderFillsBlockTimes: a fetcher that takes a chain's lease fills
// the block times of the rows its predecessor stored without one (an
// older binary, in a rolling upgrade) before it stores a block itself:
// until then those rows fell outside every time range until the next
// migration. What the fill writes: store's TestFillBlockTimes.
func TestLeaderFillsBlockTimes(t *testing.T) {
	e := newEnv(t, testenv.SQLite(t), fetch.Config{})
	st := &fillOrder{DB: e.db, filled: make(chan fill, 1)}
	e.newFetcher(st)
	defer e.start()()
	select {
	case f := <-st.filled:
		if f.chain != "ETH" {
			t.Errorf("filled the block times of chain %q, want ETH", f.chain)
		}
		if f.afterBlock {
			t.Error("the leader stored a block before it filled the block times")
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the leader did not fill the block times within 2 minutes of starting")
	}
}

// fillOrder is a store that says when the block times are filled, and
// whether a block was stored before.
type fillOrder struct {
	*store.DB
	filled chan fill
	stored atomic.Bool
}

// fill is a call of FillBlockTimes: its chain, and whether a block had
// been stored before it.
type fill struct {
	chain      string
	afterBlock bool
}

func (s *fillOrder) FillBlockTimes(ctx context.Context, chain string) (int, error) {
	f := fill{chain: chain, afterBlock: s.stored.Load()}
	n, err := s.DB.FillBlockTimes(ctx, chain)
	select {
	case s.filled <- f:
	default:
	}
	return n, err
}

func (s *fillOrder) StoreBlock(ctx context.Context, chain string, b query.Block, txs []query.Transaction, balances []query.Balance) error {
	s.stored.Store(true)
	return s.DB.StoreBlock(ctx, chain, b, txs, balances)
}

func (s *fillOrder) StoreBlocks(ctx context.Context, chain string, blocks []query.BlockData) error {
	s.stored.Store(true)
	return s.DB.StoreBlocks(ctx, chain, blocks)
}
