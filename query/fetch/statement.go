package fetch

// The statement: rows of balance changes that chain from a balance read
// from the node (the anchor), and their reconciliation with the balances
// the node reports.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/wharfhq/wharf/query"
)

// running is where a statement stands (its head): the balance after block.
type running struct {
	block   uint64
	balance query.Amount
	dirty   bool // changed since loaded: to be stored
}

// statement turns the movements of chunk c's blocks into statement rows,
// each continuing its asset's running balance, and checks the running
// balances against the balances the chunk read at its last block. Where
// they disagree, the blocks where the difference appeared are located
// (locate.go) and each part of it goes on the row of its block, which
// says it was checked and did not reconcile.
func (f *follower) statement(ctx context.Context, c *chunk, moves [][]move) error {
	c.changes = make([][]query.BalanceChange, len(c.blocks))
	c.heads = make([][]query.StatementHead, len(c.blocks))
	keys := make(map[query.Holding]bool)
	for _, ms := range moves {
		for _, m := range ms {
			keys[query.Holding{Address: m.address, Contract: m.contract}] = true
		}
	}
	for _, b := range c.balances {
		keys[query.Holding{Address: b.Address, Contract: b.Contract}] = true
	}
	// A token whose balance the node does not answer (no balanceOf) is
	// listed with its transactions, never chained.
	skip := f.unreadable(c, keys)
	if len(skip) > 0 {
		moves = slices.Clone(moves)
		for i := range moves {
			moves[i] = slices.DeleteFunc(slices.Clone(moves[i]), func(m move) bool {
				return skip[query.Holding{Address: m.address, Contract: m.contract}]
			})
		}
		for k := range skip {
			delete(keys, k)
		}
	}
	if err := f.loadHeads(ctx, keys); err != nil {
		return err
	}
	// Assets never seen start from the node's balance before the chunk.
	var anchors []query.Holding
	for k := range keys {
		if f.heads[k] == nil && moved(moves, k) {
			anchors = append(anchors, k)
		}
	}
	anchored, err := f.anchor(ctx, anchors, c)
	if err != nil {
		return err
	}
	groups := make([]grouped, len(c.blocks))
	for i := range c.blocks {
		groups[i].order, groups[i].causes, groups[i].sums = groupMoves(moves[i])
	}
	steps, agreed, err := f.disagreements(ctx, c, groups, anchored)
	if err != nil {
		return err
	}
	last := c.blocks[len(c.blocks)-1]
	covered := f.facts.covered
	// The parts of a difference that appeared before the chunk (the
	// holding did not move since) go on their own blocks first.
	for _, k := range sortedHoldings(steps) {
		for _, s := range steps[k] {
			if s.block >= c.blocks[0].Number {
				break
			}
			t, err := f.blockTime(ctx, s.block)
			if err != nil {
				return err
			}
			h := f.heads[k]
			h.balance = h.balance.Add(s.diff)
			h.block, h.dirty = s.block, true
			c.changes[0] = append(c.changes[0], query.BalanceChange{Chain: f.cfg.Chain, Address: k.Address, Contract: k.Contract,
				Block: s.block, Time: t, Amount: s.diff, BalanceAfter: h.balance, Checked: true, Difference: s.diff, Internals: covered})
		}
	}
	read := make(map[query.Holding]bool) // read at the last block
	for _, b := range c.balances {
		if b.Block == last.Number {
			read[query.Holding{Address: b.Address, Contract: b.Contract}] = true
		}
	}
	for i, b := range c.blocks {
		g := groups[i]
		order := slices.Clone(g.order)
		at := make(map[query.Holding]query.Amount)
		for _, k := range sortedHoldings(steps) {
			for _, s := range steps[k] {
				if s.block == b.Number {
					at[k] = s.diff
					if _, ok := g.causes[k]; !ok {
						order = append(order, k)
					}
				}
			}
		}
		for _, k := range order {
			sum := g.sums[k]
			diff, stepped := at[k]
			if sum.IsZero() && !stepped {
				continue // the balance did not change
			}
			h := f.heads[k]
			h.balance = h.balance.Add(sum).Add(diff)
			h.block, h.dirty = b.Number, true
			// A row is checked where the node's balance was read: at a
			// difference, and at the chunk's last block.
			checked := stepped || (i == len(c.blocks)-1 && read[k]) || agreed[readKey{b.Number, k}]
			c.changes[i] = append(c.changes[i], query.BalanceChange{Chain: f.cfg.Chain, Address: k.Address, Contract: k.Contract,
				Block: b.Number, Time: b.Time, Amount: sum.Add(diff), BalanceAfter: h.balance, Causes: g.causes[k],
				Checked: checked, Reconciled: checked && diff.IsZero(), Difference: diff, Internals: covered})
		}
		// Each block carries the heads it moved (the first also the
		// anchors and the rows before the chunk), so that any run of the
		// chunk's first blocks stored leaves rows and heads agreeing.
		c.heads[i] = f.dirtyHeads()
	}
	return nil
}

// grouped are the movements of one block grouped by holding.
type grouped struct {
	order  []query.Holding
	causes map[query.Holding][]query.Cause
	sums   map[query.Holding]query.Amount
}

// disagreements compares the balances chunk c read at its last block
// with the running balances its movements (groups) lead to, and locates
// each difference: the steps, by holding, in block order, whose diffs
// add up to it. A holding is looked at from its head's block (within the
// node's state window; the chunk's start when the head's block is not
// known) or, anchored in this chunk, from the chunk's start, where it
// agreed. Without traces a contract's payout or a self-destruct moves
// ether unseen: the native balance of each address a block touched is
// read before and after that block too, so that a change there is found
// even when another between the readings undoes it. It also returns those
// readings that agreed: their rows are checked.
func (f *follower) disagreements(ctx context.Context, c *chunk, groups []grouped, anchored map[query.Holding]bool) (map[query.Holding][]step, map[readKey]bool, error) {
	first, last := c.blocks[0].Number, c.blocks[len(c.blocks)-1].Number
	var touched map[readKey]query.Amount
	if !f.facts.covered {
		// Before and after each block: a change there is the node's,
		// whatever came and went between readings.
		reads := make(map[uint64][]query.Holding)
		for i := range c.blocks {
			for _, a := range c.touched[i] {
				k := query.Holding{Address: a}
				if f.heads[k] == nil {
					continue
				}
				if n := c.blocks[i].Number; n > 0 {
					reads[n-1] = append(reads[n-1], k)
				}
				if i < len(c.blocks)-1 {
					reads[c.blocks[i].Number] = append(reads[c.blocks[i].Number], k)
				}
			}
		}
		var err error
		if touched, err = f.readAt(ctx, reads); err != nil {
			return nil, nil, err
		}
	}
	agreed := make(map[readKey]bool)
	var probes []probe
	for _, b := range c.balances {
		if b.Block != last {
			continue // read elsewhere (state window): nothing to compare
		}
		k := query.Holding{Address: b.Address, Contract: b.Contract}
		h := f.heads[k]
		if h == nil || h.block > last {
			continue
		}
		startBal, startBlock := h.balance, h.block
		expected := func(x uint64) query.Amount {
			bal := startBal
			for i, blk := range c.blocks {
				if blk.Number > x {
					break
				}
				bal = bal.Add(groups[i].sums[k])
			}
			return bal
		}
		// The blocks where the node was read, and the difference there.
		var pts []uint64
		ds := make(map[uint64]query.Amount)
		if first > 0 {
			if n, ok := touched[readKey{first - 1, k}]; ok {
				pts = append(pts, first-1)
				ds[first-1] = n.Sub(expected(first - 1))
			}
		}
		for _, blk := range c.blocks[:len(c.blocks)-1] {
			if n, ok := touched[readKey{blk.Number, k}]; ok {
				pts = append(pts, blk.Number)
				ds[blk.Number] = n.Sub(expected(blk.Number))
			}
		}
		pts = append(pts, last)
		ds[last] = b.Amount.Sub(expected(last))
		if d := ds[pts[0]]; !d.IsZero() {
			p := probe{k: k, lo: pts[0], hi: pts[0], dHi: d, expected: expected}
			if first > 0 {
				p.lo, p.loKnown = first-1, anchored[k]
				floor := uint64(0)
				if f.target > stateWindow {
					floor = f.target - stateWindow
				}
				if !p.loKnown && startBlock > 0 && startBlock < first-1 {
					p.lo = min(max(startBlock, floor, p.lo-min(p.lo, stateWindow)), first-1)
				}
			}
			probes = append(probes, p)
		}
		for i := 1; i < len(pts); i++ {
			lo, hi := pts[i-1], pts[i]
			if ds[lo] != ds[hi] {
				probes = append(probes, probe{k: k, lo: lo, hi: hi, loKnown: true, dLo: ds[lo], dHi: ds[hi], expected: expected})
			}
		}
		for _, x := range pts[:len(pts)-1] {
			agreed[readKey{x, k}] = true // a step there says so instead
		}
	}
	if len(probes) == 0 {
		return nil, agreed, nil
	}
	steps, err := f.locate(ctx, probes)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range probes {
		if p.lo >= p.hi { // nothing to read before it (the genesis)
			steps[p.k] = append([]step{{block: p.hi, diff: p.dHi, node: p.expected(p.hi).Add(p.dHi)}}, steps[p.k]...)
		}
	}
	for _, k := range sortedHoldings(steps) {
		f.metrics.unreconciled.Add(float64(len(steps[k])))
		if !f.mismatched[k] {
			f.mismatched[k] = true
			s := steps[k][0]
			f.log.Warn("fetcher: balance does not reconcile with the movements found",
				"address", k.Address, "contract", k.Contract, "block", s.block, "difference", s.diff.String(),
				"blocks", len(steps[k]), "traced", f.facts.covered)
		}
	}
	return steps, agreed, nil
}

// blockTime is the time of block n: stored, else the node's.
func (f *follower) blockTime(ctx context.Context, n uint64) (time.Time, error) {
	b, err := f.cfg.Store.StoredBlock(ctx, f.cfg.Chain, n)
	if err == nil {
		return b.Time, nil
	}
	if !errors.Is(err, query.ErrNotFound) {
		return time.Time{}, err
	}
	blocks, err := f.cfg.Reader.Headers(ctx, n, n)
	if err != nil {
		return time.Time{}, f.nodeErr(err)
	}
	if len(blocks) == 0 {
		return time.Time{}, fmt.Errorf("fetch %s: block %d: %w", f.cfg.Chain, n, query.ErrUnavailable)
	}
	return blocks[0].Time, nil
}

// sortedHoldings returns the holdings of m in order.
func sortedHoldings[V any](m map[query.Holding]V) []query.Holding {
	out := make([]query.Holding, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, compareHoldings)
	return out
}

// unreadable returns the token holdings among keys that the chunk's
// reading asked the node for and it did not answer: a contract without
// balanceOf (or one that reverts). An address read answers its native
// balance; its tokens asked are those it is known to hold.
func (f *follower) unreadable(c *chunk, keys map[query.Holding]bool) map[query.Holding]bool {
	read := make(map[query.Holding]bool, len(c.balances))
	for _, b := range c.balances {
		read[query.Holding{Address: b.Address, Contract: b.Contract}] = true
	}
	var out map[query.Holding]bool
	for k := range keys {
		if k.Contract == "" || read[k] || !read[query.Holding{Address: k.Address}] || !slices.Contains(f.tokens[k.Address], k.Contract) {
			continue
		}
		if out == nil {
			out = make(map[query.Holding]bool)
		}
		out[k] = true
	}
	return out
}

// groupMoves groups the movements of one block by holding, in the order
// of their first movement, with the sum of each holding's.
func groupMoves(ms []move) (order []query.Holding, causes map[query.Holding][]query.Cause, sums map[query.Holding]query.Amount) {
	causes = make(map[query.Holding][]query.Cause)
	sums = make(map[query.Holding]query.Amount)
	for _, m := range ms {
		k := query.Holding{Address: m.address, Contract: m.contract}
		if _, ok := causes[k]; !ok {
			order = append(order, k)
		}
		causes[k] = append(causes[k], m.cause)
		sums[k] = sums[k].Add(m.cause.Amount)
	}
	return order, causes, sums
}

// moved reports whether k has a movement among moves.
func moved(moves [][]move, k query.Holding) bool {
	for _, ms := range moves {
		if slices.ContainsFunc(ms, func(m move) bool { return m.address == k.Address && m.contract == k.Contract }) {
			return true
		}
	}
	return false
}

// loadHeads loads, once a step, where the statements of the addresses of
// keys stand.
func (f *follower) loadHeads(ctx context.Context, keys map[query.Holding]bool) error {
	var addrs []string
	for k := range keys {
		if !f.headsLoaded[k.Address] && !slices.Contains(addrs, k.Address) {
			addrs = append(addrs, k.Address)
		}
	}
	slices.Sort(addrs)
	var hs []query.StatementHead
	if len(addrs) > 0 {
		var err error
		if hs, err = f.cfg.Store.StatementHeads(ctx, f.cfg.Chain, addrs); err != nil {
			return err
		}
	}
	for _, h := range hs {
		f.heads[query.Holding{Address: h.Address, Contract: h.Contract}] = &running{block: h.Block, balance: h.Balance}
	}
	// A holding with rows but no head (a backfill writes rows, not
	// heads: a token it found) continues from its newest row; started
	// afresh at a balance read, a difference since that row would be
	// lost, /balances and the statement disagreeing. It is
	// looked for when a holding without a head is met, not once an
	// address a step: the backfill writes such rows after the step loaded
	// its address's heads (a token it found, whose balance the step then
	// reads: takeLearned forgets f.rowless).
	var headless []query.Holding
	for k := range keys {
		if f.heads[k] == nil && !f.rowless[k] {
			headless = append(headless, k)
		}
	}
	if len(headless) > 0 {
		slices.SortFunc(headless, compareHoldings)
		bounds, err := f.cfg.Store.StatementBounds(ctx, f.cfg.Chain, headless, math.MaxInt64, math.MaxInt64)
		if err != nil {
			return err
		}
		for _, b := range bounds {
			if b.Below != nil {
				f.heads[b.Holding] = &running{balance: *b.Below}
			} else {
				f.rowless[b.Holding] = true
			}
		}
	}
	for _, a := range addrs {
		f.headsLoaded[a] = true
	}
	return nil
}

// anchor starts the statements of keys at the node's balances before the
// chunk's first block: read there when the node still has that state,
// else taken from the balance read at the chunk's last block less the
// chunk's movements (checked again at the next reading).
func (f *follower) anchor(ctx context.Context, keys []query.Holding, c *chunk) (map[query.Holding]bool, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	read := make(map[query.Holding]bool)
	slices.SortFunc(keys, compareHoldings)
	before := c.blocks[0].Number - 1
	if c.blocks[0].Number > 0 && f.target <= before+stateWindow && f.readsBalances() {
		qs := make([]query.BalanceQuery, len(keys))
		for i, k := range keys {
			qs[i] = query.BalanceQuery(k)
		}
		bals, err := f.nodeBalances(ctx, before, qs)
		if unanswered(err) {
			bals, err = nil, nil
		}
		if err != nil {
			return nil, f.nodeErr(err)
		}
		for _, b := range bals {
			k := query.Holding{Address: b.Address, Contract: b.Contract}
			f.heads[k] = &running{block: before, balance: b.Amount, dirty: true}
			read[k] = true
		}
		if err := f.anchorHistory(ctx, c, bals, before); err != nil {
			return nil, err
		}
	}
	for _, k := range keys {
		if f.heads[k] != nil {
			continue
		}
		// No state before the chunk (or a token whose balanceOf reverts):
		// start from zero; the reading at the chunk's end sets it right
		// and says so.
		f.heads[k] = &running{block: before, dirty: true}
	}
	return read, nil
}

// anchorHistory looks at the assets anchored at block before (bals, the
// node's balances there) from the start of their address's history: an
// asset first seen after it (a token received before the history, then
// rebased) may have changed since without a movement. Where the node's
// balance before the history differs, the difference is located, each
// part a row of the chunk's first block's rows at its own block, checked
// and not reconciled, so that the statement starts from the balance
// before the history like its other assets. Only for addresses whose
// backfill has ended (a pending one may still find movements there), and
// where the node has the state.
func (f *follower) anchorHistory(ctx context.Context, c *chunk, bals []query.Balance, before uint64) error {
	// The balance before the history: the node's at its start - 1, or
	// nothing before the genesis (read at block 0, which must hold none).
	at := func(low uint64) uint64 { return max(low, 1) - 1 }
	reads := make(map[uint64][]query.Holding)
	for _, b := range bals {
		if low, ok := f.historyLow[b.Address]; ok && at(low) < before {
			reads[at(low)] = append(reads[at(low)], query.Holding{Address: b.Address, Contract: b.Contract})
		}
	}
	if len(reads) == 0 {
		return nil
	}
	got, err := f.readAt(ctx, reads)
	if err != nil {
		return err
	}
	var probes []probe
	for _, b := range bals {
		k := query.Holding{Address: b.Address, Contract: b.Contract}
		low, ok := f.historyLow[b.Address]
		if !ok || at(low) >= before {
			continue
		}
		start, read := got[readKey{at(low), k}]
		switch {
		case low == 0 && (read && !start.IsZero() || k.Contract == ""):
			continue // a genesis allocation: the backfill's
		case !read && low > 0:
			continue // not readable there
		case start == b.Amount:
			continue
		}
		probes = append(probes, probe{k: k, lo: at(low), hi: before, loKnown: true, dHi: b.Amount.Sub(start),
			expected: func(uint64) query.Amount { return start }, absentZero: true})
	}
	if len(probes) == 0 {
		return nil
	}
	steps, err := f.locate(ctx, probes)
	if err != nil {
		return err
	}
	for _, p := range probes {
		bal := p.expected(p.lo)
		f.metrics.unreconciled.Add(float64(len(steps[p.k])))
		for _, s := range steps[p.k] {
			t, err := f.blockTime(ctx, s.block)
			if err != nil {
				return err
			}
			bal = bal.Add(s.diff)
			c.changes[0] = append(c.changes[0], query.BalanceChange{Chain: f.cfg.Chain, Address: p.k.Address, Contract: p.k.Contract,
				Block: s.block, Time: t, Amount: s.diff, BalanceAfter: bal, Checked: true, Difference: s.diff,
				Internals: f.facts.covered})
		}
	}
	return nil
}

// reconcile compares balances read from the node at block at (a new
// subscription, the scheduled refresh) with the running balances, which
// no movement has changed since their blocks. A difference is located
// (locate.go): each part of it is a row of its own at the block where it
// appeared, checked and not reconciled, the running balance becoming the
// node's, so that the statement adds up to it.
func (f *follower) reconcile(ctx context.Context, balances []query.Balance, at query.Block) ([]query.BalanceChange, error) {
	var probes []probe
	floor := uint64(0)
	if f.target > stateWindow {
		floor = f.target - stateWindow
	}
	for _, b := range balances {
		if b.Block != at.Number {
			continue // read elsewhere (state window): nothing to compare
		}
		k := query.Holding{Address: b.Address, Contract: b.Contract}
		h := f.heads[k]
		if h == nil || h.block > at.Number || b.Amount == h.balance {
			continue
		}
		bal := h.balance
		p := probe{k: k, lo: at.Number, hi: at.Number, dHi: b.Amount.Sub(bal), expected: func(uint64) query.Amount { return bal }}
		if h.block > 0 {
			// The head's block is known (not a row found below it): look
			// from there, within the node's state window.
			p.lo = min(max(h.block, floor), at.Number)
		}
		probes = append(probes, p)
	}
	if len(probes) == 0 {
		return nil, nil
	}
	steps, err := f.locate(ctx, probes)
	if err != nil {
		return nil, err
	}
	var rows []query.BalanceChange
	for _, p := range probes {
		if len(steps[p.k]) == 0 {
			steps[p.k] = []step{{block: at.Number, diff: p.dHi}}
		}
		f.metrics.unreconciled.Add(float64(len(steps[p.k])))
		if !f.mismatched[p.k] {
			f.mismatched[p.k] = true
			f.log.Warn("fetcher: balance does not reconcile with the movements found",
				"address", p.k.Address, "contract", p.k.Contract, "block", steps[p.k][0].block, "difference", steps[p.k][0].diff.String(),
				"blocks", len(steps[p.k]), "traced", f.facts.covered)
		}
		h := f.heads[p.k]
		for _, s := range steps[p.k] {
			t := at.Time
			if s.block != at.Number {
				if t, err = f.blockTime(ctx, s.block); err != nil {
					return nil, err
				}
			}
			h.balance = h.balance.Add(s.diff)
			h.block, h.dirty = s.block, true
			rows = append(rows, query.BalanceChange{Chain: f.cfg.Chain, Address: p.k.Address, Contract: p.k.Contract, Block: s.block,
				Time: t, Amount: s.diff, BalanceAfter: h.balance, Checked: true, Difference: s.diff,
				Internals: f.facts.covered})
		}
		// The statement stands where the node was read.
		h.block = at.Number
	}
	return rows, nil
}

// dirtyHeads returns the heads changed since they were last taken, to be
// stored with the rows.
func (f *follower) dirtyHeads() []query.StatementHead {
	var out []query.StatementHead
	for k, h := range f.heads {
		if h.dirty {
			out = append(out, query.StatementHead{Address: k.Address, Contract: k.Contract, Block: h.block, Balance: h.balance})
			h.dirty = false
		}
	}
	slices.SortFunc(out, func(a, b query.StatementHead) int {
		if a.Address != b.Address {
			return cmp.Compare(a.Address, b.Address)
		}
		return cmp.Compare(a.Contract, b.Contract)
	})
	return out
}

// resetHeads forgets the running balances, so that the next use reads
// them from the store: at each step, after anything that may have left
// the store behind the fetcher's memory (a failed write, a rewind).
func (f *follower) resetHeads() {
	f.heads = make(map[query.Holding]*running)
	f.headsLoaded = make(map[string]bool)
	f.rowless = make(map[query.Holding]bool)
}

// reconcileStored checks balances read at block at (a new subscription,
// the scheduled refresh) against the statement and stores the rows of
// any disagreement, with the heads and the balances, in one transaction.
// An asset without a statement yet starts one at its balance.
func (f *follower) reconcileStored(ctx context.Context, balances []query.Balance, at query.Block) error {
	if err := f.headsAt(ctx, balances, at, false); err != nil {
		return err
	}
	rows, err := f.reconcile(ctx, balances, at)
	if err != nil {
		return err
	}
	heads := f.dirtyHeads()
	if err := f.cfg.Store.PutStatement(ctx, f.cfg.Chain, rows, heads, balances); err != nil {
		f.resetHeads()
		return err
	}
	return nil
}

// startStatements starts the statements of balances read at block at
// (newly synced addresses owed a backfill) at those balances, with no
// row, whatever an earlier tracking left: the backfill writes the rows of
// the blocks up to at, chaining down from there (backfill_statement.go).
// Balances read elsewhere (the state window) start nothing; the head
// follower anchors those where they first move.
func (f *follower) startStatements(ctx context.Context, balances []query.Balance, at query.Block) error {
	if len(balances) == 0 {
		return nil
	}
	if err := f.headsAt(ctx, balances, at, true); err != nil {
		return err
	}
	if err := f.cfg.Store.PutStatement(ctx, f.cfg.Chain, nil, f.dirtyHeads(), balances); err != nil {
		f.resetHeads()
		return err
	}
	return nil
}

// headsAt loads the heads of the balances' holdings and starts those
// without one (all of them with restart) at the balances read at block at.
func (f *follower) headsAt(ctx context.Context, balances []query.Balance, at query.Block, restart bool) error {
	keys := make(map[query.Holding]bool)
	for _, b := range balances {
		keys[query.Holding{Address: b.Address, Contract: b.Contract}] = true
	}
	if err := f.loadHeads(ctx, keys); err != nil {
		return err
	}
	for _, b := range balances {
		k := query.Holding{Address: b.Address, Contract: b.Contract}
		if (f.heads[k] != nil && !restart) || b.Block != at.Number {
			continue
		}
		f.heads[k] = &running{block: at.Number, balance: b.Amount, dirty: true}
	}
	return nil
}
