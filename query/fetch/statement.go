package fetch

// The statement: rows of balance changes that chain from a balance read
// from the node (the anchor), and their reconciliation with the balances
// the node reports.

import (
	"context"
	"math"
	"slices"

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
// balances against the balances the chunk read at its last block.
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
	// listed with its transactions, never chained (issue 21, T1).
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
	if err := f.anchor(ctx, anchors, c); err != nil {
		return err
	}
	last := c.blocks[len(c.blocks)-1]
	rows := make(map[query.Holding]*query.BalanceChange) // the key's row at the last block
	for i, b := range c.blocks {
		order, byKey, sums := groupMoves(moves[i])
		for _, k := range order {
			sum := sums[k]
			if sum.IsZero() {
				continue // the balance did not change
			}
			h := f.heads[k]
			h.balance = h.balance.Add(sum)
			h.block, h.dirty = b.Number, true
			c.changes[i] = append(c.changes[i], query.BalanceChange{Chain: f.cfg.Chain, Address: k.Address, Contract: k.Contract,
				Block: b.Number, Time: b.Time, Amount: sum, BalanceAfter: h.balance, Causes: byKey[k],
				Traced: f.facts.traceAPI != ""}) // checked by reconcile, at the chunk's last block only
		}
		// Each block carries the heads it moved (the first also the
		// anchors), so that any run of the chunk's first blocks stored
		// leaves rows and heads agreeing.
		if i < len(c.blocks)-1 {
			c.heads[i] = f.dirtyHeads()
		}
	}
	// The rows of the last block are taken once it has all of them: a
	// pointer taken while its slice still grows points into an array the
	// next append may leave behind (issue 21, H1).
	lastRows := c.changes[len(c.blocks)-1]
	for j := range lastRows {
		rows[query.Holding{Address: lastRows[j].Address, Contract: lastRows[j].Contract}] = &lastRows[j]
	}
	extra := f.reconcile(c.balances, last.Block, rows)
	c.changes[len(c.blocks)-1] = append(c.changes[len(c.blocks)-1], extra...)
	c.heads[len(c.blocks)-1] = f.dirtyHeads()
	return nil
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
	// lost, /balances and the statement disagreeing (issue 21, R2). It is
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
func (f *follower) anchor(ctx context.Context, keys []query.Holding, c *chunk) error {
	if len(keys) == 0 {
		return nil
	}
	slices.SortFunc(keys, compareHoldings)
	before := c.blocks[0].Number - 1
	if c.blocks[0].Number > 0 && f.target <= before+stateWindow {
		qs := make([]query.BalanceQuery, len(keys))
		for i, k := range keys {
			qs[i] = query.BalanceQuery(k)
		}
		bals, err := f.cfg.Source.Balances(ctx, before, qs)
		if err != nil {
			return f.nodeErr(err)
		}
		for _, b := range bals {
			f.heads[query.Holding{Address: b.Address, Contract: b.Contract}] = &running{block: before, balance: b.Amount, dirty: true}
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
	return nil
}

// reconcile compares balances read from the node at block at with the
// running balances. The asset's row at that block (in rows) is checked:
// it says reconciled, or takes the difference and says it did not
// reconcile; an asset without a row there that disagrees gets a new row
// of the difference alone, checked and not reconciled. The running
// balance becomes the node's, so that the statement adds up to it. Rows
// at other blocks are never compared, and say so (Checked false).
func (f *follower) reconcile(balances []query.Balance, at query.Block, rows map[query.Holding]*query.BalanceChange) []query.BalanceChange {
	var extra []query.BalanceChange
	for _, b := range balances {
		if b.Block != at.Number {
			continue // read elsewhere (state window): nothing to compare
		}
		k := query.Holding{Address: b.Address, Contract: b.Contract}
		h := f.heads[k]
		node := b.Amount
		if h == nil || h.block > at.Number {
			continue
		}
		if node == h.balance {
			if r := rows[k]; r != nil {
				r.Checked, r.Reconciled = true, true
			}
			continue
		}
		diff := node.Sub(h.balance)
		h.balance, h.block, h.dirty = node, at.Number, true
		f.metrics.unreconciled.Inc()
		if !f.mismatched[k] {
			f.mismatched[k] = true
			f.log.Warn("fetcher: balance does not reconcile with the movements found",
				"address", k.Address, "contract", k.Contract, "block", at.Number, "difference", diff.String(), "traced", f.facts.traceAPI != "")
		}
		if r := rows[k]; r != nil {
			r.Amount = r.Amount.Add(diff)
			r.BalanceAfter, r.Checked, r.Reconciled, r.Difference = node, true, false, diff
			continue
		}
		extra = append(extra, query.BalanceChange{Chain: f.cfg.Chain, Address: k.Address, Contract: k.Contract, Block: at.Number,
			Time: at.Time, Amount: diff, BalanceAfter: node, Checked: true, Difference: diff,
			Traced: f.facts.traceAPI != ""})
	}
	return extra
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
			return compareStrings(a.Address, b.Address)
		}
		return compareStrings(a.Contract, b.Contract)
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
	rows := f.reconcile(balances, at, nil)
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

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
