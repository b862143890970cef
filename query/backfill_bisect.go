package query

// The bisection of the full-history backfill: the blocks where an
// address's native balance or nonce changed, found from its state at a
// few historical blocks instead of reading every block.

import (
	"context"
	"sync"
)

// probe is an interval of blocks whose bounds' states differ for some
// addresses: something changed inside it for them.
type probe struct {
	lo, hi    uint64 // the states compared are at lo-1 and hi
	addresses []string
}

// changedBlocks returns the blocks from to to where the native balance or
// the nonce of one of addresses changed. It bisects: an interval whose
// bounds hold the same balance and nonce for an address holds no change
// of it (an address's balance only falls by its own transactions, which
// move its nonce, or by a contract's call; see docs/fetcher.md), else it
// is split at its middle, down to single blocks. The probes of one level
// go to the node in one batch, so a search costs about log2(range) round
// trips and, for k changes, about k·log2(range/k) balance reads: a few
// percent of reading every block.
func changedBlocks(ctx context.Context, ss StateSource, from, to uint64, addresses []string) (map[uint64]bool, error) {
	c := stateCache{ss: ss, at: make(map[uint64]map[string]AccountState)}
	// The bounds with their nonces (before the first block everything is
	// zero): an address whose nonce is the same at both sent nothing in
	// the range (a nonce only grows), so no part of it needs its nonce.
	reads := []probeRead{{to, addresses, true}}
	if from > 0 {
		reads = append(reads, probeRead{from - 1, addresses, true})
	}
	if err := c.read(ctx, reads); err != nil {
		return nil, err
	}
	c.quiet = make(map[string]bool)
	for _, a := range addresses {
		before := uint64(0)
		if from > 0 {
			before = c.get(from-1, a).Nonce
		}
		c.quiet[a] = before == c.get(to, a).Nonce
	}
	out := make(map[uint64]bool)
	level := []probe{{from, to, addresses}}
	for len(level) > 0 {
		// Addresses whose balance is the same at both bounds need their
		// nonces compared: read those first, all in one batch.
		var reads []probeRead
		for _, p := range level {
			var same []string
			for _, a := range p.addresses {
				if !c.quiet[a] && c.balance(p.lo, a) == c.get(p.hi, a).Balance {
					same = append(same, a)
				}
			}
			if len(same) > 0 {
				if p.lo > 0 {
					reads = append(reads, probeRead{p.lo - 1, same, true})
				}
				reads = append(reads, probeRead{p.hi, same, true})
			}
		}
		if err := c.read(ctx, reads); err != nil {
			return nil, err
		}
		var split []probe
		reads = reads[:0]
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
				out[p.lo] = true
			default:
				mid := p.lo + (p.hi-p.lo)/2
				split = append(split, probe{p.lo, mid, moved}, probe{mid + 1, p.hi, moved})
				reads = append(reads, probeRead{mid, moved, false})
			}
		}
		if err := c.read(ctx, reads); err != nil {
			return nil, err
		}
		level = split
	}
	return out, nil
}

// probeRead asks for the state of addresses at block, with or without
// their nonces.
type probeRead struct {
	block     uint64
	addresses []string
	nonces    bool
}

// stateCache holds the states read during one bisection.
type stateCache struct {
	ss StateSource
	at map[uint64]map[string]AccountState
	// nonced records the (block, address) pairs whose nonce was read.
	nonced map[uint64]map[string]bool
	// quiet are the addresses whose nonce is the same at both ends of the
	// range: their nonces are never compared.
	quiet map[string]bool
}

// read reads what reads ask and is not known yet, concurrently, a few
// calls at a time.
func (c *stateCache) read(ctx context.Context, reads []probeRead) error {
	if c.nonced == nil {
		c.nonced = make(map[uint64]map[string]bool)
	}
	var todo []probeRead
	for _, r := range reads {
		var need []string
		for _, a := range r.addresses {
			_, have := c.at[r.block][a]
			if !have || (r.nonces && !c.nonced[r.block][a]) {
				need = append(need, a)
			}
		}
		if len(need) > 0 {
			todo = append(todo, probeRead{r.block, need, r.nonces})
		}
	}
	var mu sync.Mutex
	return parallel(ctx, len(todo), 8, func(ctx context.Context, i int) error {
		r := todo[i]
		states, err := c.ss.States(ctx, r.block, r.addresses, r.nonces)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if c.at[r.block] == nil {
			c.at[r.block] = make(map[string]AccountState)
			c.nonced[r.block] = make(map[string]bool)
		}
		for j, a := range r.addresses {
			c.at[r.block][a] = states[j]
			if r.nonces {
				c.nonced[r.block][a] = true
			}
		}
		return nil
	})
}

// get is the state read of a at block; zero before block 0.
func (c *stateCache) get(block uint64, a string) AccountState {
	return c.at[block][a]
}

// balance is a's balance just before block lo ("0" before the genesis).
func (c *stateCache) balance(lo uint64, a string) string {
	if lo == 0 {
		return "0"
	}
	return c.get(lo-1, a).Balance
}

// differs reports whether a's balance or nonce differs between just
// before lo and hi.
func (c *stateCache) differs(lo, hi uint64, a string) bool {
	before := AccountState{Balance: "0"}
	if lo > 0 {
		before = c.get(lo-1, a)
	}
	after := c.get(hi, a)
	if before.Balance != after.Balance {
		return true
	}
	// Equal balances: the nonces were read, unless the address sent
	// nothing in the whole range.
	return !c.quiet[a] && before.Nonce != after.Nonce
}
