package fetch

// Reading past blocks for a backfill, through the family's Reader: the
// activity of every block of a range, or of the blocks its history
// search found.

import (
	"context"
	"fmt"
	"time"

	"github.com/wharfhq/wharf/internal/parallel"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// Passes of the backfill over the chain (chain.Query.Pass): the family
// keeps how it reads each (dense or sparse) apart from the head's.
const (
	backfillPass = "backfill" // every block of a range
	historyPass  = "history"  // the blocks a history search found
)

// pastChunk is the most blocks one Activity call of a backfill reads.
const pastChunk = 256

// pastBlock is what a backfill found in one block: the transactions that
// touch the backfilled addresses, each whole, and the movements of their
// balances, from which their statement rows are made.
type pastBlock struct {
	number uint64
	time   time.Time
	txs    []query.Transaction
	moves  []move
	// touched are the backfilled addresses the block touches: a party of
	// one of its transactions, its movements, withdrawals or fees.
	touched   []string
	internals bool // the block's internal movements were read
}

// move is one movement of a tracked address's balance of one asset.
type move struct {
	address  string
	contract string      // "" for the native coin, else the holding key
	cause    query.Cause // with a signed amount
}

// movesOf is the movements of activity a, as the statement takes them.
func movesOf(a chain.BlockActivity) []move {
	out := make([]move, len(a.Moves))
	for i, m := range a.Moves {
		out[i] = move{address: m.Address, contract: m.Holding,
			cause: query.Cause{Kind: m.Kind, TxHash: m.Tx, Amount: m.Amount, Ref: m.Ref, Fee: m.Fee}}
	}
	return out
}

// pastOf is the block of activity a, for the backfilled addresses of set.
func pastOf(a chain.BlockActivity, set map[string]bool, internals bool) pastBlock {
	p := pastBlock{number: a.Block.Number, time: a.Block.Time, internals: internals, moves: movesOf(a), touched: touchedBy(a, set)}
	for _, tx := range a.Txs {
		p.txs = append(p.txs, storedTx(a.Block, tx))
	}
	return p
}

// pastActivity reads the activity of the blocks from to to for set, all
// of them (fewer is an error: the node has lost them, or they changed
// while read), with their internal movements unless noInternals.
func (bf *backfiller) pastActivity(ctx context.Context, from, to uint64, set map[string]bool, pass string, noInternals bool) ([]chain.BlockActivity, error) {
	var out []chain.BlockActivity
	for lo := from; lo <= to; {
		acts, err := bf.cfg.Reader.Activity(ctx, chain.Query{From: lo, To: to, Tracked: set, Pass: pass, NoInternals: noInternals})
		if err != nil {
			return nil, err
		}
		if len(acts) == 0 {
			return nil, fmt.Errorf("block %d: the node does not have it: %w", lo, query.ErrUnavailable)
		}
		out = append(out, acts...)
		lo += uint64(len(acts))
	}
	return out, nil
}

// scan reads every block from to to, a chunk at a time, with their
// internal movements too when internals is true; it returns the blocks that hold
// something for addresses, oldest first.
func (bf *backfiller) scan(ctx context.Context, from, to uint64, addresses []string, internals bool) ([]pastBlock, error) {
	if to < from || len(addresses) == 0 {
		return nil, nil
	}
	set := addressSet(addresses)
	var out []pastBlock
	for lo := from; lo <= to; lo += pastChunk {
		hi := min(to, lo+pastChunk-1)
		acts, err := bf.pastActivity(ctx, lo, hi, set, backfillPass, !internals)
		if err != nil {
			return nil, fmt.Errorf("scan %d-%d: %w", lo, hi, err)
		}
		for _, a := range acts {
			if p := pastOf(a, set, internals); len(p.txs) > 0 || len(p.moves) > 0 {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// readFound reads the blocks numbers (ascending) whole for addresses,
// with their internal movements where the node has them: consecutive
// ones in one Activity call, a few calls at once.
func (bf *backfiller) readFound(ctx context.Context, numbers []uint64, addresses []string) ([]pastBlock, error) {
	type run struct{ lo, hi uint64 }
	var runs []run
	for _, n := range numbers {
		if k := len(runs) - 1; k >= 0 && runs[k].hi+1 == n && n-runs[k].lo < pastChunk {
			runs[k].hi = n
			continue
		}
		runs = append(runs, run{n, n})
	}
	set := addressSet(addresses)
	internals := bf.facts.covered
	found := make([][]pastBlock, len(runs))
	err := parallel.Do(ctx, len(runs), 4, func(ctx context.Context, i int) error {
		acts, err := bf.pastActivity(ctx, runs[i].lo, runs[i].hi, set, historyPass, false)
		if err != nil {
			return err
		}
		for _, a := range acts {
			found[i] = append(found[i], pastOf(a, set, internals))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []pastBlock
	for _, f := range found {
		out = append(out, f...)
	}
	return out, nil
}

func addressSet(addresses []string) map[string]bool {
	set := make(map[string]bool, len(addresses))
	for _, a := range addresses {
		set[a] = true
	}
	return set
}
