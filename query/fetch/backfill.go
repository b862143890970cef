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
}

// run runs the pending backfills beside the head follower until
// lead ends: a slice at a time, then waiting for the follower's next step
// (which may have synced new subscriptions) when none is pending, backing
// off after errors.
func (bf *backfiller) run(lead context.Context, facts chainFacts) {
	bf.facts = facts
	bf.resumed = false
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
	changes, err := bf.pastStatement(ctx, job, lo, found, state)
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
// archive node, or recent blocks) it searches by history (bisection on
// state, logs by address; every change found, internal ones included)
// when that costs less than reading every block, or scans every block
// with its traces; without the state it scans blocks, receipts and logs
// (traces need the state too).
func (bf *backfiller) backfillRange(ctx context.Context, from, to uint64, addresses []string) ([]pastBlock, bool, error) {
	ss, _ := bf.cfg.Source.(query.StateSource)
	state, err := bf.stateBefore(ctx, ss, from)
	if err != nil {
		return nil, false, bf.nodeErr(err)
	}
	if state && (bf.cfg.BackfillAll || bisectPays(len(addresses), to-from+1)) {
		found, err := bf.history(ctx, ss, from, to, addresses)
		if !errors.Is(err, query.ErrNoState) {
			return found, true, bf.nodeErr(err)
		}
		bf.log.Warn("fetcher: the node lost the state of old blocks during a backfill; scanning blocks instead", "from", from, "to", to, "err", err)
		state = false
	}
	r := pastReader{src: bf.cfg.Source}
	if state && bf.facts.traceAPI != "" {
		r.trace = bf.traces
	}
	found, err := r.scan(ctx, from, to, addresses, 0)
	if err != nil {
		return nil, false, bf.nodeErr(err)
	}
	return found, state, bf.nodeErr(bf.pastTokenInfo(ctx, found))
}

// bisectPays reports whether searching blocks by the state of addresses
// costs fewer calls than reading each of blocks: the search reads each
// address's balance and nonce at the range's bounds at least (four calls),
// a scan a block and its traces (two).
func bisectPays(addresses int, blocks uint64) bool {
	return uint64(2*addresses) <= blocks
}

// stateBefore reports whether the node has the state of the block before
// from (of block 0 for from 0), asking for a balance there.
func (bf *backfiller) stateBefore(ctx context.Context, ss query.StateSource, from uint64) (bool, error) {
	if ss == nil {
		return false, nil
	}
	_, err := ss.States(ctx, max(from, 1)-1, []string{"0x0000000000000000000000000000000000000000"}, false)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, query.ErrNoState):
		return false, nil
	}
	return false, err
}

// traces reads the internal movements of b.
func (bf *backfiller) traces(ctx context.Context, b query.SourceBlock) ([]query.InternalMove, error) {
	return bf.facts.tracer.Traces(ctx, b, bf.facts.traceAPI)
}

// history finds what blocks from to to hold for addresses without reading
// every block: the token transfers from eth_getLogs with the addresses in
// topic 1, then topic 2 (Source.Transfers adapts its ranges to the node's
// limits); the native movements by bisecting the range on the addresses'
// balance and nonce; then it reads only the blocks where something
// changed, whole (every receipt, every Transfer log, the traces when the
// node has them), so that each transaction is stored with all its
// movements.
func (bf *backfiller) history(ctx context.Context, ss query.StateSource, from, to uint64, addresses []string) ([]pastBlock, error) {
	logs, err := bf.cfg.Source.Transfers(ctx, from, to, addresses)
	if err != nil {
		return nil, err
	}
	changed, err := changedBlocks(ctx, ss, from, to, addresses)
	if err != nil {
		return nil, err
	}
	for _, l := range logs {
		changed[l.BlockNumber] = true
	}
	if err := bf.unseenCalls(ctx, ss, from, to, addresses, changed); err != nil {
		return nil, err
	}
	set := make(map[string]bool, len(addresses))
	for _, a := range addresses {
		set[a] = true
	}
	r := pastReader{src: bf.cfg.Source}
	if bf.facts.traceAPI != "" {
		r.trace = bf.traces
	}
	byBlock := logsByBlock(logs)
	numbers := sortedKeys(changed)
	found := make([]pastBlock, len(numbers))
	err = parallel.Do(ctx, len(numbers), 4, func(ctx context.Context, i int) error {
		blocks, err := bf.cfg.Source.Blocks(ctx, numbers[i], numbers[i])
		if err != nil {
			return err
		}
		if len(blocks) == 0 {
			return fmt.Errorf("block %d: the node does not have it: %w", numbers[i], query.ErrUnavailable)
		}
		found[i], err = r.block(ctx, blocks[0], byBlock[numbers[i]], set)
		return err
	})
	if err != nil {
		return nil, err
	}
	return found, bf.pastTokenInfo(ctx, found)
}

// unseenCalls adds to changed the blocks from to to holding what the
// state search cannot see for addresses, read for the
// addresses that could have had it (code and nonces at to):
//
//   - a contract (code at to) can be called without a movement of value,
//     a log naming it or a nonce of its own (a token's own transfer, a
//     rebase, a payment that passes through): the blocks with a
//     transaction from, to or creating it;
//   - an address with neither code nor a nonce at to (creatable: it may
//     be a counterfactual contract, or an address that never sent) may
//     have been created and destroyed within one transaction (EIP-6780),
//     its value burnt or passed on: it holds no code, nonce or balance of
//     it at any block's end. The blocks with a transaction to or creating
//     it, and where the node has traces, the blocks whose internal
//     movements (a CREATE2 by a factory, a self-destruct) touch it. An
//     address with a nonce and no code sent a transaction: it is not a
//     contract, so nothing created it (a creation needs a nonce of 0 and
//     no code, and only the creating transaction can destroy it).
//
// The blocks are read 256 a call (transactions only); with traces, each
// block with transactions is traced once more for creatable addresses.
// Withdrawals and fee income to these addresses count too.
func (bf *backfiller) unseenCalls(ctx context.Context, ss query.StateSource, from, to uint64, addresses []string, changed map[uint64]bool) error {
	cr, ok := ss.(query.CodeReader)
	if !ok {
		return nil
	}
	code, err := cr.HasCode(ctx, to, addresses)
	if err != nil {
		return err
	}
	var codeless []string
	contracts := make(map[string]bool)
	for i, a := range addresses {
		if code[i] {
			contracts[a] = true
		} else {
			codeless = append(codeless, a)
		}
	}
	creatable := make(map[string]bool)
	if len(codeless) > 0 {
		states, err := ss.States(ctx, to, codeless, true)
		if err != nil {
			return err
		}
		for i, a := range codeless {
			if states[i].Nonce == 0 {
				creatable[a] = true
			}
		}
	}
	if len(contracts) == 0 && len(creatable) == 0 {
		return nil
	}
	either := func(a string) bool { return contracts[a] || creatable[a] }
	isCreatable := func(a string) bool { return creatable[a] }
	trace := len(creatable) > 0 && bf.facts.traceAPI != ""
	for lo := from; lo <= to; lo += 256 {
		hi := min(to, lo+255)
		blocks, err := bf.cfg.Source.Blocks(ctx, lo, hi)
		if err != nil {
			return err
		}
		var traced []query.SourceBlock // creatable addresses' blocks to trace
		for _, b := range blocks {
			switch {
			case len(matchBlock(b, nil, nil, either).touched) > 0:
				changed[b.Number] = true
			case trace && len(b.Txs) > 0 && !changed[b.Number]:
				traced = append(traced, b)
			}
		}
		hit := make([]bool, len(traced))
		err = parallel.Do(ctx, len(traced), 4, func(ctx context.Context, i int) error {
			moves, err := bf.traces(ctx, traced[i])
			if err != nil {
				return fmt.Errorf("traces of block %d: %w", traced[i].Number, err)
			}
			hit[i] = len(matchBlock(traced[i], nil, moves, isCreatable).touched) > 0
			return nil
		})
		if err != nil {
			return err
		}
		for i, b := range traced {
			if hit[i] {
				changed[b.Number] = true
			}
		}
		if uint64(len(blocks)) < hi-lo+1 {
			return fmt.Errorf("blocks %d-%d: the node has %d of them: %w", lo, hi, len(blocks), query.ErrUnavailable)
		}
	}
	return nil
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
