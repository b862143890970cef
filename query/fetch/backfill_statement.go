package fetch

// The statement of backfilled blocks: rows made newest first, chaining
// down from the balance the statement already knows above them, and
// checked against the balance before them where it is known.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/wharfhq/wharf/query"
)

// pastStatement makes the statement rows of the backfilled slice lo to
// job.Next from the movements found in it (oldest first). Each holding's
// rows chain down from its balance after the slice: the opening balance
// of its stored statement above, else the node's. Where the balance
// before the slice is known (the last row of an earlier tracking below
// it, the node's state there, or nothing before the genesis) and the rows
// do not lead to it, the slice's lowest row of the holding takes the
// difference and says so (Reconciled false), so that the statement adds
// up to the node's balance at both ends. At the end of a job with the
// node's state, every address's native balance is checked, moved or not,
// and with the state each address a found block touches has its native
// balance checked at that block, moved or not.
// The genesis allocation of the native coin is a row of its own, at
// block 0. The addresses of zero held nothing before lo (openingZero):
// their native statements chain from zero there, every address of them
// checked as at the end of a job with the state.
func (bf *backfiller) pastStatement(ctx context.Context, job query.BackfillJob, lo uint64, found []pastBlock, state bool, zero map[string]bool) ([]query.BalanceChange, error) {
	hi := job.Next
	var holdings []query.Holding
	seen := make(map[query.Holding]bool)
	add := func(h query.Holding) {
		if !seen[h] {
			seen[h] = true
			holdings = append(holdings, h)
		}
	}
	for _, p := range found {
		for _, m := range p.moves {
			add(query.Holding{Address: m.address, Contract: m.contract})
		}
		if state {
			for _, a := range p.touched {
				add(query.Holding{Address: a})
			}
		}
	}
	if lo == job.Low {
		for _, a := range job.Addresses {
			if state || lo == 0 || zero[a] {
				add(query.Holding{Address: a})
			}
		}
	}
	if len(holdings) == 0 {
		return nil, nil
	}
	slices.SortFunc(holdings, compareHoldings)
	bounds, err := bf.cfg.Store.StatementBounds(ctx, bf.cfg.Chain, holdings, lo, hi)
	if err != nil {
		return nil, err
	}
	running, err := bf.balancesAbove(ctx, bounds, hi, state)
	if err != nil {
		return nil, err
	}
	// A token whose balance the node does not answer (no balanceOf) is
	// listed with its transactions, never chained.
	holdings = slices.DeleteFunc(holdings, func(h query.Holding) bool { _, ok := running[h]; return !ok })
	above := maps.Clone(running)
	var rows []query.BalanceChange
	lowest := make(map[query.Holding]int) // the index of each holding's lowest row
	for i := len(found) - 1; i >= 0; i-- {
		p := found[i]
		order, causes, sums := groupMoves(p.moves)
		if state {
			// Every address the block touches gets a native row to check
			// at its block, a movement or not: a change nothing read
			// explains (an internal one without traces) lands there, not
			// on a later row. One that reconciles and moved
			// nothing is dropped below.
			for _, a := range p.touched {
				if h := (query.Holding{Address: a}); !slices.Contains(order, h) {
					order = append(order, h)
				}
			}
		}
		for _, h := range order {
			sum := sums[h]
			after, ok := running[h]
			if (sum.IsZero() && !state) || !ok {
				continue
			}
			running[h] = after.Sub(sum)
			rows = append(rows, query.BalanceChange{Chain: bf.cfg.Chain, Address: h.Address, Contract: h.Contract,
				Block: p.number, Time: p.time, Amount: sum, BalanceAfter: after, Causes: causes[h],
				Internals: p.internals}) // not compared with the node at its block
			lowest[h] = len(rows) - 1
		}
	}
	before, err := bf.balancesBefore(ctx, bounds, lo, state, zero)
	if err != nil {
		return nil, err
	}
	if state {
		// The node has the state of every block of the slice: each row
		// is compared with it at its block, chaining up from the balance
		// before the slice, and takes the difference where the balance
		// first disagrees (a payment out not seen without
		// traces, no longer drives the rows below zero; a rebase lands on
		// its block's row, not the slice's lowest).
		tops, err := bf.checkRows(ctx, rows, before)
		if err != nil {
			return nil, err
		}
		// A difference on a row appeared after the row before it, on
		// the block where it shows.
		located, err := bf.locateRows(ctx, rows, before, lo, found)
		if err != nil {
			return nil, err
		}
		rows = append(rows, located...)
		for h, top := range tops {
			running[h] = top // the balance the rows lead to, compared with the one above below
		}
	}
	for _, h := range holdings {
		want, known := before[h]
		if lo == 0 && h.Contract == "" {
			// The genesis: the allocation is the balance at block 0 (the
			// node's when it has that state, else what the rows lead to).
			// It is a row of its own, never one of a difference: one is
			// taken by the lowest row, below.
			alloc := want
			if !known {
				alloc = running[h]
			}
			if !alloc.IsZero() {
				at, err := bf.pastTime(ctx, 0, found)
				if err != nil {
					return nil, err
				}
				rows = append(rows, bf.genesisRow(h, alloc, known, at.time))
			}
			if !known {
				continue
			}
		}
		if !known {
			continue
		}
		diff := running[h].Sub(want)
		if state {
			// The rows chain up from the balance before the slice, each
			// checked: what is left is between the newest of them and the
			// balance above.
			if _, ok := lowest[h]; !ok {
				running[h] = want
			}
			diff = above[h].Sub(running[h])
			running[h] = above[h]
			if diff.IsZero() {
				continue
			}
			if rowAt(rows, h, hi) {
				// The slice's newest block has the holding's row, checked
				// there: the statement above starts elsewhere.
				bf.log.Warn("fetcher: the statement above a backfilled slice does not start from the node's balance",
					"address", h.Address, "contract", h.Contract, "block", hi, "difference", diff.String())
				continue
			}
		} else if diff.IsZero() {
			continue
		}
		bf.metrics.unreconciled.Inc()
		bf.log.Warn("fetcher: backfilled movements do not reconcile with the balance before them",
			"address", h.Address, "contract", h.Contract, "block", lo, "difference", diff.String())
		if i, ok := lowest[h]; ok && !state {
			r := &rows[i]
			r.Amount, r.Difference = r.Amount.Add(diff), diff
			continue
		}
		if state && (lo > 0 || newest(rows, h) >= 0) {
			// Between the rows (or the balance before the slice) and
			// the balance above: on the blocks where it appeared.
			from := uint64(max(newest(rows, h), int64(lo)-1))
			more, err := bf.locateAbove(ctx, h, from, hi, running[h].Sub(diff), diff, found)
			if err != nil {
				return nil, err
			}
			rows = append(rows, more...)
			continue
		}
		// No row in the slice: the balance above it (read at hi, or the
		// statement's above) is where the difference shows, never a
		// synthetic row at its bottom.
		at, err := bf.pastTime(ctx, hi, found)
		if err != nil {
			return nil, err
		}
		// running[h] is the balance above: the slice moved nothing of h.
		rows = append(rows, query.BalanceChange{Chain: bf.cfg.Chain, Address: h.Address, Contract: h.Contract, Block: hi, Time: at.time,
			Amount: diff, BalanceAfter: running[h], Difference: diff, Internals: at.internals})
	}
	// A row of a block that touched the address and moved nothing, or
	// whose movements cancel out, and that the node agrees with.
	return slices.DeleteFunc(rows, func(r query.BalanceChange) bool { return r.Amount.IsZero() && r.Difference.IsZero() }), nil
}

// checkRows compares each of rows (made newest first, for the holdings
// of before) with the node's balance at its block, oldest first: a row
// continues the holding's previous one (the balance before the slice for
// the first), says reconciled when that is the node's balance, else takes
// the difference and says it did not reconcile. It returns the balance
// each holding's newest row ends at. A token the node does not answer at
// a row's block leaves that row unchecked, chained.
func (bf *backfiller) checkRows(ctx context.Context, rows []query.BalanceChange, before map[query.Holding]query.Amount) (map[query.Holding]query.Amount, error) {
	at := make(map[uint64][]query.Holding)
	var blocks []uint64
	for _, r := range rows {
		h := query.Holding{Address: r.Address, Contract: r.Contract}
		if _, ok := before[h]; !ok {
			continue
		}
		if len(at[r.Block]) == 0 {
			blocks = append(blocks, r.Block)
		}
		at[r.Block] = append(at[r.Block], h)
	}
	node := make(map[uint64]map[query.Holding]query.Amount, len(blocks))
	for _, b := range blocks {
		hs := at[b]
		slices.SortFunc(hs, compareHoldings)
		read, err := bf.nodeBalances(ctx, slices.Compact(hs), b, false)
		if err != nil {
			return nil, err
		}
		node[b] = read
	}
	tops := make(map[query.Holding]query.Amount)
	for i := len(rows) - 1; i >= 0; i-- {
		r := &rows[i]
		h := query.Holding{Address: r.Address, Contract: r.Contract}
		prev, ok := tops[h]
		if !ok {
			if prev, ok = before[h]; !ok {
				continue
			}
		}
		want := prev.Add(r.Amount)
		r.BalanceAfter = want
		if v, ok := node[r.Block][h]; ok {
			r.Checked, r.Reconciled = true, v == want
			if diff := v.Sub(want); !diff.IsZero() {
				bf.metrics.unreconciled.Inc()
				bf.log.Warn("fetcher: a backfilled row does not reconcile with the node's balance at its block",
					"address", h.Address, "contract", h.Contract, "block", r.Block, "difference", diff.String())
				r.Amount, r.BalanceAfter, r.Difference = r.Amount.Add(diff), v, diff
			}
		}
		tops[h] = r.BalanceAfter
	}
	return tops, nil
}

// rowAt reports whether rows hold one of h at block b.
func rowAt(rows []query.BalanceChange, h query.Holding, b uint64) bool {
	return slices.ContainsFunc(rows, func(r query.BalanceChange) bool {
		return r.Block == b && r.Address == h.Address && r.Contract == h.Contract
	})
}

// genesisRow is the row at block 0 of h's native coin: its allocation,
// checked when read from the node's state at block 0.
func (bf *backfiller) genesisRow(h query.Holding, alloc query.Amount, checked bool, at time.Time) query.BalanceChange {
	return query.BalanceChange{Chain: bf.cfg.Chain, Address: h.Address, Block: 0, Time: at, Amount: alloc, BalanceAfter: alloc,
		Causes: []query.Cause{{Kind: query.KindGenesis, Amount: alloc}}, Checked: checked, Reconciled: checked, Internals: true}
}

// balancesAbove returns each holding's balance after block hi: from the
// statement above it when that tells, else from the node, read at hi when
// the node has the state there, else at the stored head (where it is the
// same: had the holding moved since, the head follower would have
// started its statement).
func (bf *backfiller) balancesAbove(ctx context.Context, bounds []query.StatementBound, hi uint64, state bool) (map[query.Holding]query.Amount, error) {
	out := make(map[query.Holding]query.Amount, len(bounds))
	var ask []query.Holding
	for _, b := range bounds {
		if b.Above != nil {
			out[b.Holding] = *b.Above
			continue
		}
		ask = append(ask, b.Holding)
	}
	if len(ask) == 0 {
		return out, nil
	}
	at := hi
	if !state {
		cp, ok, err := bf.cfg.Store.Checkpoint(ctx, bf.cfg.Chain)
		if err != nil {
			return nil, err
		}
		if ok {
			at = max(at, cp.Number)
		}
	}
	read, err := bf.nodeBalances(ctx, ask, at, false)
	if err != nil {
		return nil, err
	}
	for _, h := range ask {
		if v, ok := read[h]; ok {
			out[h] = v
		}
	}
	return out, nil
}

// balancesBefore returns the balances of the holdings before block lo
// that are known: zero before the genesis (the native allocation at block
// 0 when the node has that state), the balance after the last row of an
// earlier tracking, zero for the native coin of the addresses of zero
// (nothing of them below lo), else the node's when it has the state.
func (bf *backfiller) balancesBefore(ctx context.Context, bounds []query.StatementBound, lo uint64, state bool, zero map[string]bool) (map[query.Holding]query.Amount, error) {
	out := make(map[query.Holding]query.Amount, len(bounds))
	var ask []query.Holding
	for _, b := range bounds {
		switch {
		case b.Contract == "" && zero[b.Address] && b.Below == nil:
			out[b.Holding] = query.Amount{}
		case lo == 0 && b.Contract == "" && state:
			ask = append(ask, b.Holding)
		case lo == 0 && b.Contract == "":
		case lo == 0:
			out[b.Holding] = query.Amount{}
		case b.Below != nil:
			out[b.Holding] = *b.Below
		case state:
			ask = append(ask, b.Holding)
		}
	}
	if len(ask) == 0 {
		return out, nil
	}
	read, err := bf.nodeBalances(ctx, ask, max(lo, 1)-1, true)
	if err != nil {
		return nil, err
	}
	for _, h := range ask {
		out[h] = read[h]
	}
	return out, nil
}

// nodeBalances reads the balances of holdings at block from the node. A
// token that answers no balance there (a contract not yet created, or a
// balanceOf that reverts) counts as holding none with orZero, else is
// left out.
func (bf *backfiller) nodeBalances(ctx context.Context, holdings []query.Holding, block uint64, orZero bool) (map[query.Holding]query.Amount, error) {
	qs := make([]query.BalanceQuery, len(holdings))
	for i, h := range holdings {
		qs[i] = query.BalanceQuery(h)
	}
	bals, err := bf.core.nodeBalances(ctx, block, qs)
	if unanswered(err) {
		// No balances at that block (none at all, or a UTXO node's below
		// its tip): nothing known there, nothing chained from it.
		return map[query.Holding]query.Amount{}, nil
	}
	if err != nil {
		return nil, bf.nodeErr(fmt.Errorf("balances at block %d: %w", block, err))
	}
	out := make(map[query.Holding]query.Amount, len(holdings))
	for _, b := range bals {
		out[query.Holding{Address: b.Address, Contract: b.Contract}] = b.Amount
	}
	for _, h := range holdings {
		_, ok := out[h]
		switch {
		case ok:
		case h.Contract != "" && orZero:
			out[h] = query.Amount{}
		case h.Contract != "":
		default:
			return nil, fmt.Errorf("balance of %s at block %d: the node did not answer it: %w", h.Address, block, query.ErrUnavailable)
		}
	}
	return out, nil
}

// pastTime returns block lo as found, or its time read from the node,
// for a row of a difference placed there.
func (bf *backfiller) pastTime(ctx context.Context, lo uint64, found []pastBlock) (pastBlock, error) {
	if len(found) > 0 && found[0].number == lo {
		return found[0], nil
	}
	headers, err := bf.cfg.Reader.Headers(ctx, lo, lo)
	if err != nil {
		return pastBlock{}, bf.nodeErr(err)
	}
	if len(headers) == 0 {
		return pastBlock{}, fmt.Errorf("block %d: the node does not have it: %w", lo, query.ErrUnavailable)
	}
	return pastBlock{number: lo, time: headers[0].Time, internals: bf.facts.covered}, nil
}

func compareHoldings(a, b query.Holding) int {
	if c := cmp.Compare(a.Address, b.Address); c != 0 {
		return c
	}
	return cmp.Compare(a.Contract, b.Contract)
}
