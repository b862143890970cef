package fetch

// Locating a disagreement: when the balance read from the node at a block
// is not the statement's, the blocks where the difference appeared, found
// by reading the node's balances at blocks in between.

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/wharfhq/wharf/internal/parallel"
	"github.com/wharfhq/wharf/query"
)

// probe is a disagreement to locate: holding k's difference d(b) = node(b)
// − expected(b) is known at block hi, and at lo (dLo) when loKnown, else
// read there. expected gives the statement's balance after any
// block in [lo, hi].
type probe struct {
	k        query.Holding
	lo, hi   uint64
	loKnown  bool
	dLo, dHi query.Amount // dLo when loKnown
	expected func(block uint64) query.Amount
	// absentZero counts a balance the node does not give as zero (a
	// token looked at from before its contract existed).
	absentZero bool
}

// step is where a difference appeared: the node's balance at block moved
// by diff more than the statement's, and was node there.
type step struct {
	block uint64
	diff  query.Amount
	node  query.Amount
}

// splits is the most blocks read inside one interval in one round: a
// 16-block batch is located in two rounds.
const splits = 7

// locate finds, for each probe, every block of (lo, hi] where its
// difference changes, by reading the node's balances at blocks in between
// (one batch a block, the blocks of a round in parallel) and splitting
// every interval whose ends differ until it is one block long. A
// difference already there at lo (not known zero) goes on lo+1: the
// oldest block it can be put on. Where a reading fails (a token that does
// not answer there, a block whose state the node no longer keeps) the
// interval's difference goes on its upper end. A difference that appears
// and goes again between two readings is not seen: only its net shows.
// The steps of each holding come in block order; their diffs add up to
// its dHi.
func (c *core) locate(ctx context.Context, probes []probe) (map[query.Holding][]step, error) {
	type span struct {
		p      *probe
		a, b   uint64
		da, db query.Amount
		nb     query.Amount // node's balance at b
	}
	out := make(map[query.Holding][]step)
	add := func(k query.Holding, s step) {
		if s.diff.IsZero() {
			return
		}
		out[k] = append(out[k], s)
	}
	var spans []span
	// The first round also reads lo where its difference is not known.
	var atLo []*probe
	for i := range probes {
		p := &probes[i]
		if p.hi <= p.lo {
			continue
		}
		if !p.loKnown {
			atLo = append(atLo, p)
		}
	}
	reads := make(map[uint64][]query.Holding)
	for _, p := range atLo {
		reads[p.lo] = append(reads[p.lo], p.k)
	}
	got, err := c.readAt(ctx, reads)
	if err != nil {
		return nil, err
	}
	for i := range probes {
		p := &probes[i]
		if p.hi <= p.lo {
			continue
		}
		nHi := p.expected(p.hi).Add(p.dHi)
		s := span{p: p, a: p.lo, b: p.hi, da: p.dLo, db: p.dHi, nb: nHi}
		if !p.loKnown {
			n, ok := got[readKey{p.lo, p.k}]
			if !ok {
				add(p.k, step{block: p.hi, diff: p.dHi, node: nHi})
				continue
			}
			s.da = n.Sub(p.expected(p.lo))
			// Already there at lo: on the oldest block it can go on.
			add(p.k, step{block: p.lo + 1, diff: s.da, node: p.expected(p.lo + 1).Add(s.da)})
		}
		if s.da != s.db {
			spans = append(spans, s)
		}
	}
	for len(spans) > 0 {
		reads = make(map[uint64][]query.Holding)
		for _, s := range spans {
			for _, x := range splitPoints(s.a, s.b) {
				reads[x] = append(reads[x], s.p.k)
			}
		}
		got, err := c.readAt(ctx, reads)
		if err != nil {
			return nil, err
		}
		var next []span
		for _, s := range spans {
			pts := splitPoints(s.a, s.b)
			if len(pts) == 0 { // one block: the difference appeared at b
				add(s.p.k, step{block: s.b, diff: s.db.Sub(s.da), node: s.nb})
				continue
			}
			a, da := s.a, s.da
			failed := false
			for _, x := range append(pts, s.b) {
				var dx, nx query.Amount
				if x == s.b {
					dx, nx = s.db, s.nb
				} else {
					n, ok := got[readKey{x, s.p.k}]
					if !ok && !s.p.absentZero {
						failed = true
						break
					}
					dx, nx = n.Sub(s.p.expected(x)), n
				}
				if dx != da {
					next = append(next, span{p: s.p, a: a, b: x, da: da, db: dx, nb: nx})
				}
				a, da = x, dx
			}
			if failed {
				// Not readable in between: the rest on the interval's end.
				add(s.p.k, step{block: s.b, diff: s.db.Sub(da), node: s.nb})
			}
		}
		spans = next
	}
	for k := range out {
		slices.SortFunc(out[k], func(x, y step) int { return cmp.Compare(x.block, y.block) })
		// Two steps on one block (a difference at lo and one just after
		// it) are one.
		merged := out[k][:0]
		for _, s := range out[k] {
			if n := len(merged); n > 0 && merged[n-1].block == s.block {
				merged[n-1].diff = merged[n-1].diff.Add(s.diff)
				merged[n-1].node = s.node
				continue
			}
			merged = append(merged, s)
		}
		out[k] = merged
	}
	return out, nil
}

// splitPoints are the blocks read inside (a, b): all of them when few,
// else splits evenly spaced ones.
func splitPoints(a, b uint64) []uint64 {
	if b <= a+1 {
		return nil
	}
	inner := b - a - 1
	if inner <= splits {
		out := make([]uint64, 0, inner)
		for x := a + 1; x < b; x++ {
			out = append(out, x)
		}
		return out
	}
	out := make([]uint64, 0, splits)
	for i := uint64(1); i <= splits; i++ {
		out = append(out, a+(b-a)*i/(splits+1))
	}
	return slices.Compact(out)
}

type readKey struct {
	block uint64
	k     query.Holding
}

// readAt reads the balances of reads' holdings at each of its blocks, one
// batch a block, four blocks at a time. A balance the node does not give
// (a token that does not answer; a block it keeps no state for, or one
// the Reader tells no balances at) is left out: none when the Reader
// tells no balances at all.
func (c *core) readAt(ctx context.Context, reads map[uint64][]query.Holding) (map[readKey]query.Amount, error) {
	out := make(map[readKey]query.Amount)
	if !c.readsBalances() {
		return out, nil
	}
	blocks := sortedKeys(reads)
	var mu sync.Mutex
	err := parallel.Do(ctx, len(blocks), 4, func(ctx context.Context, i int) error {
		at := blocks[i]
		ks := reads[at]
		slices.SortFunc(ks, compareHoldings)
		ks = slices.Compact(ks)
		qs := make([]query.BalanceQuery, len(ks))
		for j, k := range ks {
			qs[j] = query.BalanceQuery(k)
		}
		bals, err := c.nodeBalances(ctx, at, qs)
		if errors.Is(err, query.ErrNoState) || unanswered(err) {
			return nil
		}
		if err != nil {
			return c.nodeErr(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, b := range bals {
			out[readKey{at, query.Holding{Address: b.Address, Contract: b.Contract}}] = b.Amount
		}
		return nil
	})
	return out, err
}

// locateRows moves the differences that checkRows put on backfilled rows
// (rows, of the slice from block lo) to the blocks where they appeared:
// a row's difference appeared after the holding's previous row (or the
// balance before the slice, known from before), not necessarily at the
// row's block. A part that appeared earlier becomes a row of its own,
// checked and not reconciled; the row keeps the rest (reconciled when
// none is left). It returns the rows added.
func (bf *backfiller) locateRows(ctx context.Context, rows []query.BalanceChange, before map[query.Holding]query.Amount, lo uint64, found []pastBlock) ([]query.BalanceChange, error) {
	byHolding := make(map[query.Holding][]int)
	for i, r := range rows {
		h := query.Holding{Address: r.Address, Contract: r.Contract}
		if _, ok := before[h]; ok && r.Block >= lo {
			byHolding[h] = append(byHolding[h], i)
		}
	}
	type owner struct {
		row      int // rows index of the row whose difference it is
		lo, hi   uint64
		previous query.Amount // the balance after lo
	}
	var (
		probes []probe
		owners []owner
	)
	// Without traces a row that agrees with the node may hide a change
	// that came and went since the row before it (ether paid in unseen,
	// then out at the row's block): the node is read before such a row
	// too.
	reads := make(map[uint64][]query.Holding)
	for _, h := range sortedHoldings(byHolding) {
		idx := byHolding[h]
		slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(rows[a].Block, rows[b].Block) })
		for j, i := range idx {
			r := rows[i]
			prevBlock := lo - 1
			if j > 0 {
				prevBlock = rows[idx[j-1]].Block
			} else if lo == 0 {
				continue
			}
			if !r.Internals && r.Checked && r.Difference.IsZero() && r.Block-1 > prevBlock {
				reads[r.Block-1] = append(reads[r.Block-1], h)
			}
		}
	}
	got, err := bf.readAt(ctx, reads)
	if err != nil {
		return nil, err
	}
	for _, h := range sortedHoldings(byHolding) {
		idx := byHolding[h]
		slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(rows[a].Block, rows[b].Block) })
		if lo == 0 {
			idx = idx[1:] // no block before the genesis to look from
			if len(idx) == 0 {
				continue
			}
		}
		prevBlock, prev := lo-1, before[h]
		if lo == 0 {
			prevBlock, prev = rows[byHolding[h][0]].Block, rows[byHolding[h][0]].BalanceAfter
		}
		for _, i := range idx {
			r := rows[i]
			if n, ok := got[readKey{r.Block - 1, h}]; ok && r.Difference.IsZero() && r.Block > prevBlock+1 && n != prev {
				// Came before the row's block and went at it.
				base, at := prev, r.Block
				probes = append(probes, probe{k: h, lo: prevBlock, hi: at - 1, loKnown: true, dHi: n.Sub(prev),
					expected: func(uint64) query.Amount { return base }})
				owners = append(owners, owner{row: i, lo: prevBlock, hi: at, previous: prev})
			} else if !r.Difference.IsZero() && r.Checked && r.Block > prevBlock+1 {
				base, sum, at := prev, r.Amount.Sub(r.Difference), r.Block
				probes = append(probes, probe{k: h, lo: prevBlock, hi: at, loKnown: true, dHi: r.Difference,
					expected: func(x uint64) query.Amount {
						if x < at {
							return base
						}
						return base.Add(sum)
					}})
				owners = append(owners, owner{row: i, lo: prevBlock, hi: at, previous: prev})
			}
			prevBlock, prev = r.Block, r.BalanceAfter
		}
	}
	if len(probes) == 0 {
		return nil, nil
	}
	steps, err := bf.locate(ctx, probes)
	if err != nil {
		return nil, err
	}
	var added []query.BalanceChange
	for j, o := range owners {
		r := &rows[o.row]
		bal := o.previous
		for _, s := range steps[probes[j].k] {
			if s.block <= o.lo || s.block >= o.hi {
				continue // another row's, or this row's own block
			}
			at, err := bf.pastTime(ctx, s.block, found)
			if err != nil {
				return nil, err
			}
			bal = bal.Add(s.diff)
			added = append(added, query.BalanceChange{Chain: bf.cfg.Chain, Address: r.Address, Contract: r.Contract, Block: s.block,
				Time: at.time, Amount: s.diff, BalanceAfter: bal, Checked: true, Difference: s.diff, Internals: at.internals})
			r.Amount, r.Difference = r.Amount.Sub(s.diff), r.Difference.Sub(s.diff)
		}
		r.Reconciled = r.Difference.IsZero()
	}
	return added, nil
}

// locateAbove locates a difference between the balance backfilled rows
// of holding h lead to after block from (base) and the balance above
// the slice, at block hi (base + diff): the rows it returns, one a block
// where it appeared, checked and not reconciled.
func (bf *backfiller) locateAbove(ctx context.Context, h query.Holding, from, hi uint64, base, diff query.Amount, found []pastBlock) ([]query.BalanceChange, error) {
	steps, err := bf.locate(ctx, []probe{{k: h, lo: from, hi: hi, loKnown: true, dHi: diff,
		expected: func(uint64) query.Amount { return base }}})
	if err != nil {
		return nil, err
	}
	if len(steps[h]) == 0 {
		steps[h] = []step{{block: hi, diff: diff}}
	}
	var rows []query.BalanceChange
	bal := base
	for _, s := range steps[h] {
		at, err := bf.pastTime(ctx, s.block, found)
		if err != nil {
			return nil, err
		}
		bal = bal.Add(s.diff)
		// The balance above may be the statement's, not read here.
		rows = append(rows, query.BalanceChange{Chain: bf.cfg.Chain, Address: h.Address, Contract: h.Contract, Block: s.block,
			Time: at.time, Amount: s.diff, BalanceAfter: bal, Checked: s.block != hi, Difference: s.diff, Internals: at.internals})
	}
	return rows, nil
}

// newest returns the block of h's newest row among rows, -1 when none.
func newest(rows []query.BalanceChange, h query.Holding) int64 {
	n := int64(-1)
	for _, r := range rows {
		if r.Address == h.Address && r.Contract == h.Contract {
			n = max(n, int64(r.Block))
		}
	}
	return n
}
