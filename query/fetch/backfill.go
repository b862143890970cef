package fetch

// Backfills: the past transactions new subscriptions are owed, run beside
// the head follower, newest first, checkpointed; and full history on an
// archive node without scanning every block.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wharfhq/wharf/internal/parallel"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// Backfill slices: a slice is the blocks one StoreBackfill covers. Its
// width adapts so that a slice takes about backfillSliceTime: a kill
// loses at most that much work, and the first transactions show soon.
const (
	backfillFirstSlice = 1024
	backfillSliceTime  = 2 * time.Second
)

// backfiller is the backfill worker's state: the goroutine that runs the
// backfills (beside the head follower under Run, after its step in
// FetchOnce) owns it. It hands the tokens it finds to the follower
// (learned); the follower wakes it after each step (wake).
type backfiller struct {
	*core
	facts   chainFacts // a copy, settled before the worker starts
	learned *handoff[learnedTokens]
	wake    <-chan struct{}
	// sliceWidth is the width of the next slice, in blocks.
	sliceWidth uint64
	// resumed is set once the backfills that ended before this run,
	// their balances not recorded stored, were handed to the follower.
	resumed bool
	// full is whether the history search answers without the state
	// before a range (fullHistory), nil until asked in this run.
	full *bool
}

// run runs the pending backfills beside the head follower until
// lead ends: a slice at a time, then waiting for the follower's next step
// (which may have synced new subscriptions) when none is pending, backing
// off after errors.
func (bf *backfiller) run(lead context.Context, facts chainFacts) {
	bf.facts = facts
	bf.resumed, bf.full = false, nil
	backoff := time.Duration(0)
	for lead.Err() == nil {
		more, err := bf.step(lead, facts)
		switch {
		case err != nil && lead.Err() != nil:
			return
		case errors.Is(err, query.ErrLeaseLost):
			return // the step loop sees it too, and ends the lead
		case err != nil:
			backoff = bf.backoff(backoff)
			bf.metrics.errors.Inc()
			bf.log.Warn("fetcher: backfill failed", "err", err, "retry", backoff)
			bf.wait(lead, backoff)
		case more:
			backoff = 0
		default:
			backoff = 0
			select {
			case <-lead.Done():
			case <-bf.wake:
			}
		}
	}
}

// step stores one slice of every pending backfill (jobs share the
// reading of their blocks: one job holds every address synced at once);
// more reports that some remain.
func (bf *backfiller) step(ctx context.Context, facts chainFacts) (more bool, err error) {
	bf.facts = facts
	if err := bf.resume(ctx); err != nil {
		return false, err
	}
	jobs, err := bf.cfg.Store.Backfills(ctx, bf.cfg.Chain)
	if err != nil {
		return false, err
	}
	for _, job := range jobs {
		done, err := bf.slice(ctx, job)
		if err != nil {
			return false, err
		}
		more = more || !done
	}
	return more, nil
}

// resume hands the follower, once a run before any slice, the addresses
// whose backfill ended before (a restart, or another leader) and whose
// balances were not recorded stored, with the tokens their statements
// have rows of: it reads the balances of those it does not know yet,
// records them stored, and they turn ACTIVE.
func (bf *backfiller) resume(ctx context.Context) error {
	if bf.resumed {
		return nil
	}
	pending, err := bf.cfg.Store.BalancesPending(ctx, bf.cfg.Chain)
	if err != nil {
		return err
	}
	var l *learnedTokens
	for _, h := range pending {
		if h.Contract == "" {
			if l != nil {
				bf.learned.put(*l)
			}
			l = &learnedTokens{address: h.Address, ended: true}
			continue
		}
		if l != nil && l.address == h.Address {
			l.contracts = append(l.contracts, h.Contract)
		}
	}
	if l != nil {
		bf.learned.put(*l)
	}
	bf.resumed = true
	return nil
}

// slice backfills the newest slice of job and stores it, with its
// statement rows, and the job's new position; done reports that the job
// has ended.
func (bf *backfiller) slice(ctx context.Context, job query.BackfillJob) (done bool, err error) {
	width := bf.sliceWidth
	if width == 0 {
		width = cmp.Or(bf.cfg.BackfillSlice, backfillFirstSlice)
	}
	lo := job.Low
	if job.Next-job.Low >= width {
		lo = job.Next - width + 1
	}
	start := bf.cfg.Clock.Now()
	found, state, err := bf.backfillRange(ctx, lo, job.Next, job.Addresses)
	if err != nil {
		return false, fmt.Errorf("backfill %d-%d of %d addresses: %w", lo, job.Next, len(job.Addresses), err)
	}
	var txs []query.Transaction
	for _, p := range found {
		txs = append(txs, p.txs...)
	}
	zero, err := bf.openingZero(ctx, job, lo)
	if err != nil {
		return false, fmt.Errorf("backfill %d-%d of %d addresses: %w", lo, job.Next, len(job.Addresses), bf.nodeErr(err))
	}
	changes, err := bf.pastStatement(ctx, job, lo, found, state, zero)
	if err != nil {
		return false, fmt.Errorf("backfill %d-%d of %d addresses: statement: %w", lo, job.Next, len(job.Addresses), err)
	}
	if err := bf.cfg.Store.StoreBackfill(ctx, bf.cfg.Chain, job, txs, changes, int64(lo)-1); err != nil {
		return false, err
	}
	bf.learnTokens(job.Addresses, txs, lo == job.Low)
	bf.metrics.txs.Add(float64(len(txs)))
	switch took := bf.cfg.Clock.Now().Sub(start); {
	case took < backfillSliceTime/2:
		bf.sliceWidth = 2 * width
	case took > 2*backfillSliceTime && width > 1:
		bf.sliceWidth = width / 2
	default:
		bf.sliceWidth = width
	}
	if lo == job.Low {
		bf.log.Info("fetcher: backfill done", "addresses", len(job.Addresses), "from", job.Low)
		return true, nil
	}
	return false, nil
}

// backfillRange returns what blocks from to to hold for addresses, oldest
// first, and whether the node has the state before them (so that the
// statement can be checked there). Where the node has that state (an
// archive node, or recent blocks) it searches by history (the family's
// HistorySource: for the EVM, logs by address and bisection on state,
// every change found, internal ones included) when that costs less than
// reading every block, or reads the activity of every block with its
// internal movements; without the state it reads every block without
// them (a node traces only blocks whose state it keeps).
func (bf *backfiller) backfillRange(ctx context.Context, from, to uint64, addresses []string) ([]pastBlock, bool, error) {
	state, err := bf.stateBefore(ctx, from, addresses)
	if err != nil {
		return nil, false, bf.nodeErr(err)
	}
	hs, searches := bf.cfg.Reader.(chain.HistorySource)
	if searches && (bf.cfg.BackfillAll || historyPays(len(addresses), to-from+1)) {
		// The search needs the state before the range (the EVM's
		// bisection), unless it answers back to the genesis without it (a
		// UTXO node's address index).
		full := state
		if !full {
			if full, err = bf.fullHistory(ctx); err != nil {
				return nil, false, bf.nodeErr(err)
			}
		}
		if full {
			found, err := bf.history(ctx, hs, from, to, addresses)
			if !errors.Is(err, chain.ErrNotImplemented) {
				return found, state, bf.nodeErr(err)
			}
			bf.log.Warn("fetcher: the node's history search stopped answering during a backfill (old state lost, or no index); scanning blocks instead", "from", from, "to", to, "err", err)
			state, bf.full = false, nil
		}
	}
	found, err := bf.scan(ctx, from, to, addresses, bf.facts.covered && (state || bf.facts.internalsSource == "")) // a family without internal movements is covered
	if err != nil {
		return nil, false, bf.nodeErr(err)
	}
	return found, state, bf.nodeErr(bf.pastTokenInfo(ctx, found))
}

// openingZero returns the addresses of job known to hold nothing before
// block lo, the start of their history (the job's last slice), on a
// chain whose balances are their movements (chain.Ledger): all of them
// when lo is the genesis, else those the history search, answering back
// to the genesis, finds nothing of below lo (one search each). Their
// statements chain from zero there.
func (bf *backfiller) openingZero(ctx context.Context, job query.BackfillJob, lo uint64) (map[string]bool, error) {
	l, ok := bf.cfg.Reader.(chain.Ledger)
	if lo != job.Low || !ok || !l.MovementsOnly() {
		return nil, nil
	}
	zero := make(map[string]bool, len(job.Addresses))
	if lo == 0 || job.Born {
		for _, a := range job.Addresses {
			zero[a] = true
		}
		return zero, nil
	}
	hs, ok := bf.cfg.Reader.(chain.HistorySource)
	if !ok {
		return zero, nil
	}
	if full, err := bf.fullHistory(ctx); err != nil || !full {
		return zero, err
	}
	below := make([]bool, len(job.Addresses))
	err := parallel.Do(ctx, len(job.Addresses), 4, func(ctx context.Context, i int) error {
		blocks, err := hs.History(ctx, job.Addresses[i], 0, lo-1)
		below[i] = len(blocks) > 0
		return err
	})
	if errors.Is(err, chain.ErrNotImplemented) {
		return zero, nil
	}
	if err != nil {
		return nil, err
	}
	for i, a := range job.Addresses {
		if !below[i] {
			zero[a] = true
		}
	}
	return zero, nil
}

// fullHistory reports whether the Reader's history search answers for
// any range without the state before it (chain.HistoryReach), asked once
// a run.
func (bf *backfiller) fullHistory(ctx context.Context) (bool, error) {
	if bf.full != nil {
		return *bf.full, nil
	}
	hr, ok := bf.cfg.Reader.(chain.HistoryReach)
	if !ok {
		return false, nil
	}
	full, err := hr.FullHistory(ctx)
	if err != nil {
		return false, err
	}
	bf.full = &full
	return full, nil
}

// historyPays reports whether searching blocks by the history of
// addresses costs fewer calls than reading each of blocks: a search
// reads at least each address's balance and nonce at the range's bounds
// (four calls), a scan a block and its internal movements (two).
func historyPays(addresses int, blocks uint64) bool {
	return uint64(2*addresses) <= blocks
}

// stateBefore reports whether the node has the state of the block before
// from (of block 0 for from 0), asking for the balance of one of
// addresses there: never where the Reader reads no balances.
func (bf *backfiller) stateBefore(ctx context.Context, from uint64, addresses []string) (bool, error) {
	br, ok := bf.cfg.Reader.(chain.BalanceReader)
	if !ok || len(addresses) == 0 {
		return false, nil
	}
	_, err := br.Balances(ctx, max(from, 1)-1, []query.BalanceQuery{{Address: addresses[0]}})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, query.ErrNoState), errors.Is(err, chain.ErrNotImplemented):
		return false, nil
	}
	return false, err
}

// history finds what blocks from to to hold for addresses without reading
// every block: the family's history search names the blocks where one of
// them may have moved (all of them at once where it batches, else one
// address at a time), and only those are read, whole (every receipt and
// log, the internal movements where the node has them), so that each
// transaction is stored with all its movements.
func (bf *backfiller) history(ctx context.Context, hs chain.HistorySource, from, to uint64, addresses []string) ([]pastBlock, error) {
	var numbers []uint64
	if hb, ok := hs.(chain.HistoryBatcher); ok {
		var err error
		if numbers, err = hb.Histories(ctx, addresses, from, to); err != nil {
			return nil, err
		}
	} else {
		each := make([][]uint64, len(addresses))
		err := parallel.Do(ctx, len(addresses), 4, func(ctx context.Context, i int) error {
			var err error
			each[i], err = hs.History(ctx, addresses[i], from, to)
			return err
		})
		if err != nil {
			return nil, err
		}
		numbers = slices.Sorted(slices.Values(slices.Concat(each...)))
		numbers = slices.Compact(numbers)
	}
	found, err := bf.readFound(ctx, numbers, addresses)
	if err != nil {
		return nil, err
	}
	return found, bf.pastTokenInfo(ctx, found)
}

// pastTokenInfo fills in the symbols and decimals of the transfers found.
func (bf *backfiller) pastTokenInfo(ctx context.Context, found []pastBlock) error {
	txs := make([][]query.Transaction, len(found))
	for i := range found {
		txs[i] = found[i].txs
	}
	return bf.tokenInfo(ctx, bf.facts.native, txs)
}

// learnTokens hands the tokens the backfilled transactions moved for
// addresses to the head follower, which reads their balances; ended says
// that the addresses' backfill has ended with these: the follower then
// records their balances stored, which makes them ACTIVE.
func (bf *backfiller) learnTokens(addresses []string, txs []query.Transaction, ended bool) {
	set := make(map[string]bool, len(addresses))
	for _, a := range addresses {
		set[a] = true
	}
	found := make(map[string][]string)
	for _, tx := range txs {
		for _, tr := range tx.Transfers {
			if !query.IsToken(tr.Asset) {
				continue
			}
			key := tr.Holding()
			for _, a := range []string{tr.From, tr.To} {
				if set[a] && !slices.Contains(found[a], key) {
					found[a] = append(found[a], key)
				}
			}
		}
	}
	if ended {
		for _, a := range addresses {
			if _, ok := found[a]; !ok {
				found[a] = nil
			}
		}
	}
	for _, a := range sortedKeys(found) {
		bf.learned.put(learnedTokens{address: a, contracts: found[a], ended: ended})
	}
}

// takeLearned adds the tokens backfills found to the addresses' known
// tokens, reads the balances of the addresses that hold new ones, at cp,
// into their statements, and then records the balances stored for the
// addresses whose backfill has ended (ACTIVE from then on). What it
// could not finish it takes again at its next call.
func (f *follower) takeLearned(ctx context.Context, cp query.Block) error {
	items := f.learned.take()
	if err := f.useLearned(ctx, cp, items); err != nil {
		for _, l := range items {
			delete(f.tokens, l.address) // read from the store again
		}
		f.learned.putBack(items)
		return err
	}
	return nil
}

// useLearned does takeLearned's work with the tokens taken.
func (f *follower) useLearned(ctx context.Context, cp query.Block, items []learnedTokens) error {
	learned := make(map[string][]string)
	ended := make(map[string]bool)
	for _, l := range items {
		if _, ok := learned[l.address]; !ok {
			learned[l.address] = nil
		}
		for _, c := range l.contracts {
			if !slices.Contains(learned[l.address], c) {
				learned[l.address] = append(learned[l.address], c)
			}
		}
		ended[l.address] = ended[l.address] || l.ended
	}
	if len(learned) == 0 {
		return nil
	}
	var fresh []string
	for _, a := range sortedKeys(learned) {
		tokens, err := f.tokensOf(ctx, a)
		if err != nil {
			return err
		}
		added := false
		for _, c := range learned[a] {
			if !slices.Contains(tokens, c) {
				tokens = append(tokens, c)
				added = true
			}
		}
		f.tokens[a] = tokens
		if added {
			fresh = append(fresh, a)
		}
	}
	if len(fresh) > 0 {
		slices.Sort(fresh)
		bals, err := f.readBalances(ctx, fresh, cp.Number)
		if err != nil {
			return err
		}
		// The backfill wrote rows of these tokens since the step looked: a
		// token's statement continues from its newest row (loadHeads).
		clear(f.rowless)
		if err := f.reconcileStored(ctx, bals, cp); err != nil {
			return err
		}
	}
	var done []string
	for _, a := range sortedKeys(ended) {
		if ended[a] {
			done = append(done, a)
		}
	}
	return f.cfg.Store.BalancesStored(ctx, f.cfg.Chain, done, cp.Number)
}
