package evm

// The bisection of History: the blocks where an address's native
// balance or nonce changed, found from its state at a few historical
// blocks instead of reading every block.

import (
	"context"
	"maps"
	"slices"

	"github.com/wharfhq/wharf/internal/parallel"
	"github.com/wharfhq/wharf/query"
)

// span is an interval of blocks whose bounds' states differ for some
// addresses: something changed inside it for them.
type span struct {
	lo, hi    uint64 // the states compared are at lo-1 and hi
	addresses []string
	// nonces: the states read inside the interval include the nonces, so
	// that a change of nonce alone is followed down to its block.
	nonces bool
}

// changedBlocks returns the blocks from to to where the native balance or
// the nonce of one of addresses changed, in two passes.
//
// First it bisects on balances: an interval whose bounds hold the same
// balance of an address holds no change of it (see below), else it is
// split at its middle, down to single blocks. The spans of one level go
// to the node together, so a search costs about log2(range) round trips
// and, for k changes, about k·log2(range/k) balance reads.
//
// Then it checks the nonces, which catch what the balances cannot (an
// address's transaction whose fee and value other movements in the same
// interval made up for): an address whose nonce is the same at both ends
// of the range sent nothing in it (a nonce only grows); for one that sent,
// its nonce is read on either side of each block found for it, and a
// stretch between them over which the nonce moved is bisected again on
// balance and nonce together. When every send was found with a change of
// balance (the rule: fees are paid), this costs two reads per block found,
// in one more round trip.
//
// An address's balance only falls by its own transactions, which move its
// nonce, or by a contract's call: a contract whose balance falls and comes
// back to the same amount within an interval, without a nonce of its own
// moving, can be missed (docs/fetcher.md).
func changedBlocks(ctx context.Context, ss query.StateSource, from, to uint64, addresses []string) (map[uint64]bool, error) {
	return newStateCache(ss).changedBlocks(ctx, from, to, addresses, nil)
}

// changedBlocks is changedBlocks with the states read kept in c. The
// blocks of known (where something is known to have touched the
// addresses: a trace names them) cut the range first: the states on
// either side of each are read with the range's bounds, and the
// stretches between them bisected, so that a change found this way costs
// two reads instead of a descent.
func (c *stateCache) changedBlocks(ctx context.Context, from, to uint64, addresses []string, known []uint64) (map[uint64]bool, error) {
	if to < from || len(addresses) == 0 {
		return map[uint64]bool{}, nil
	}
	reads := []query.StateRead{{Block: to, Addresses: addresses, Nonces: true}}
	if from > 0 {
		reads = append(reads, query.StateRead{Block: from - 1, Addresses: addresses, Nonces: true})
	}
	cuts := []uint64{to} // the last block of each first span
	for _, b := range known {
		if b < from || b > to {
			continue
		}
		if b > from {
			cuts = append(cuts, b-1)
		}
		cuts = append(cuts, b)
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	for _, b := range cuts[:len(cuts)-1] {
		reads = append(reads, query.StateRead{Block: b, Addresses: addresses})
	}
	if err := c.read(ctx, reads); err != nil {
		return nil, err
	}
	level := make([]span, 0, len(cuts))
	lo := from
	for _, b := range cuts {
		level = append(level, span{lo, b, addresses, false})
		lo = b + 1
	}
	found := make(map[uint64][]string) // the blocks, and for whom
	if err := c.bisect(ctx, level, found); err != nil {
		return nil, err
	}

	// The nonces of the addresses that sent something in the range, on
	// either side of the blocks found for them: the stretches in between
	// (gaps) must hold none of their sends.
	type gap struct {
		lo, hi  uint64
		address string
	}
	foundFor := make(map[string][]uint64)
	for _, b := range slices.Sorted(maps.Keys(found)) {
		for _, a := range found[b] {
			foundFor[a] = append(foundFor[a], b)
		}
	}
	var gaps []gap
	for _, a := range addresses {
		if c.nonce(from, a) == c.get(to, a).Nonce {
			continue // sent nothing
		}
		lo := from
		for _, b := range append(foundFor[a], to+1) {
			if b > lo {
				gaps = append(gaps, gap{lo, b - 1, a})
			}
			lo = b + 1
		}
	}
	reads = reads[:0]
	for _, g := range gaps {
		if g.lo > 0 {
			reads = append(reads, query.StateRead{Block: g.lo - 1, Addresses: []string{g.address}, Nonces: true})
		}
		reads = append(reads, query.StateRead{Block: g.hi, Addresses: []string{g.address}, Nonces: true})
	}
	if err := c.read(ctx, reads); err != nil {
		return nil, err
	}
	var again []span
	for _, g := range gaps {
		if c.nonce(g.lo, g.address) != c.get(g.hi, g.address).Nonce {
			again = append(again, span{g.lo, g.hi, []string{g.address}, true})
		}
	}
	if err := c.bisect(ctx, again, found); err != nil {
		return nil, err
	}
	out := make(map[uint64]bool, len(found))
	for b := range found {
		out[b] = true
	}
	return out, nil
}

// bisect splits the intervals of level where their addresses' states
// differ, level by level, down to single blocks, which it adds to found
// with the addresses that changed there.
func (c *stateCache) bisect(ctx context.Context, level []span, found map[uint64][]string) error {
	for len(level) > 0 {
		var split []span
		var reads []query.StateRead
		for _, p := range level {
			var moved []string
			for _, a := range p.addresses {
				if c.differs(p.lo, p.hi, a) {
					moved = append(moved, a)
				}
			}
			switch {
			case len(moved) == 0:
			case p.lo == p.hi:
				found[p.lo] = append(found[p.lo], moved...)
			default:
				mid := p.lo + (p.hi-p.lo)/2
				split = append(split, span{p.lo, mid, moved, p.nonces}, span{mid + 1, p.hi, moved, p.nonces})
				reads = append(reads, query.StateRead{Block: mid, Addresses: moved, Nonces: p.nonces})
			}
		}
		if err := c.read(ctx, reads); err != nil {
			return err
		}
		level = split
	}
	return nil
}

// stateCache holds the states read during one search.
type stateCache struct {
	ss query.StateSource
	at map[uint64]map[string]query.AccountState
	// nonced records the (block, address) pairs whose nonce was read.
	nonced map[uint64]map[string]bool
}

func newStateCache(ss query.StateSource) *stateCache {
	return &stateCache{ss: ss, at: make(map[uint64]map[string]query.AccountState), nonced: make(map[uint64]map[string]bool)}
}

// read reads what reads ask and is not known yet, a block once: in one
// call when the source batches, else a block at a time, a few
// concurrently.
func (c *stateCache) read(ctx context.Context, reads []query.StateRead) error {
	need := make(map[uint64]map[string]bool) // by block: address, with its nonce
	for _, r := range reads {
		for _, a := range r.Addresses {
			_, have := c.at[r.Block][a]
			if have && (!r.Nonces || c.nonced[r.Block][a]) {
				continue
			}
			if need[r.Block] == nil {
				need[r.Block] = make(map[string]bool)
			}
			need[r.Block][a] = need[r.Block][a] || r.Nonces
		}
	}
	var todo []query.StateRead
	for _, b := range slices.Sorted(maps.Keys(need)) {
		// Apart: the addresses whose nonces are asked, and the others.
		var with, without []string
		for _, a := range slices.Sorted(maps.Keys(need[b])) {
			if need[b][a] {
				with = append(with, a)
			} else {
				without = append(without, a)
			}
		}
		if len(with) > 0 {
			todo = append(todo, query.StateRead{Block: b, Addresses: with, Nonces: true})
		}
		if len(without) > 0 {
			todo = append(todo, query.StateRead{Block: b, Addresses: without, Nonces: false})
		}
	}
	if len(todo) == 0 {
		return nil
	}
	got := make([][]query.AccountState, len(todo))
	if sb, ok := c.ss.(query.StateBatcher); ok {
		var err error
		if got, err = sb.StatesAt(ctx, todo); err != nil {
			return err
		}
	} else {
		err := parallel.Do(ctx, len(todo), 8, func(ctx context.Context, i int) error {
			var err error
			got[i], err = c.ss.States(ctx, todo[i].Block, todo[i].Addresses, todo[i].Nonces)
			return err
		})
		if err != nil {
			return err
		}
	}
	for i, r := range todo {
		if c.at[r.Block] == nil {
			c.at[r.Block] = make(map[string]query.AccountState)
			c.nonced[r.Block] = make(map[string]bool)
		}
		for j, a := range r.Addresses {
			s := got[i][j]
			if !r.Nonces {
				s.Nonce = c.at[r.Block][a].Nonce // one read before, if any
			}
			c.at[r.Block][a] = s
			c.nonced[r.Block][a] = c.nonced[r.Block][a] || r.Nonces
		}
	}
	return nil
}

// get is the state read of a at block.
func (c *stateCache) get(block uint64, a string) query.AccountState {
	return c.at[block][a]
}

// nonce is a's nonce just before block lo (0 before the genesis).
func (c *stateCache) nonce(lo uint64, a string) uint64 {
	if lo == 0 {
		return 0
	}
	return c.get(lo-1, a).Nonce
}

// knowsNonce reports whether a's nonce just before block lo is known.
func (c *stateCache) knowsNonce(lo uint64, a string) bool {
	return lo == 0 || c.nonced[lo-1][a]
}

// differs reports whether a's balance differs between just before lo and
// hi, or its nonce where both are known.
func (c *stateCache) differs(lo, hi uint64, a string) bool {
	var before query.AccountState
	if lo > 0 {
		before = c.get(lo-1, a)
	}
	after := c.get(hi, a)
	if before.Balance != after.Balance {
		return true
	}
	return c.knowsNonce(lo, a) && c.nonced[hi][a] && before.Nonce != after.Nonce
}
