package query

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
)

// ErrNoState: the node has no state for the block asked (it is not an
// archive node), so balances and nonces there cannot be read.
var ErrNoState = errors.New("no state for that block")

// StateSource is a Source that reads accounts at historical blocks, for
// the full-history backfill (BackfillAll).
type StateSource interface {
	// States returns the native balance of addresses at block and, with
	// nonces, their nonce, in the order of addresses. Errors: ErrNoState
	// when the node keeps no state for block, ErrUnavailable.
	States(ctx context.Context, block uint64, addresses []string, nonces bool) ([]AccountState, error)
}

// AccountState is an address's native balance and nonce at a block.
type AccountState struct {
	Balance string // wei, exact decimal
	Nonce   uint64
}

// Backfill slices: a slice is the blocks one StoreBackfill covers. Its
// width adapts so that a slice takes about backfillSliceTime: a kill
// loses at most that much work, and the first transactions show soon.
const (
	backfillFirstSlice = 1024
	backfillSliceTime  = 2 * time.Second
)

// backfillLoop runs the pending backfills beside the head follower until
// lead ends: a slice at a time, then waiting for the follower's next step
// (which may have synced new subscriptions) when none is pending, backing
// off after errors.
func (f *Fetcher) backfillLoop(lead context.Context) {
	backoff := time.Duration(0)
	for lead.Err() == nil {
		more, err := f.backfillStep(lead)
		switch {
		case err != nil && lead.Err() != nil:
			return
		case errors.Is(err, ErrLeaseLost):
			return // the step loop sees it too, and ends the lead
		case err != nil:
			backoff = f.backoff(backoff)
			f.metrics.errors.Inc()
			f.log.Warn("fetcher: backfill failed", "err", err, "retry", backoff)
			f.wait(lead, backoff)
		case more:
			backoff = 0
		default:
			backoff = 0
			select {
			case <-lead.Done():
			case <-f.wake:
			}
		}
	}
}

// wakeBackfills tells the backfill loop that a step has ended.
func (f *Fetcher) wakeBackfills() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// backfillStep stores one slice of every pending backfill (jobs share the
// reading of their blocks: one job holds every address synced at once);
// more reports that some remain.
func (f *Fetcher) backfillStep(ctx context.Context) (more bool, err error) {
	if !f.ready.Load() {
		return false, nil // the head follower has not probed the node yet
	}
	jobs, err := f.cfg.Store.Backfills(ctx, f.cfg.Chain)
	if err != nil {
		return false, err
	}
	for _, job := range jobs {
		done, err := f.backfillSlice(ctx, job)
		if err != nil {
			return false, err
		}
		more = more || !done
	}
	return more, nil
}

// backfillSlice backfills the newest slice of job and stores it with the
// job's new position; done reports that the job has ended.
func (f *Fetcher) backfillSlice(ctx context.Context, job BackfillJob) (done bool, err error) {
	width := f.sliceWidth
	if width == 0 {
		width = cmp.Or(f.cfg.BackfillSlice, backfillFirstSlice)
	}
	lo := job.Low
	if job.Next-job.Low >= width {
		lo = job.Next - width + 1
	}
	start := f.cfg.Clock.Now()
	txs, err := f.backfillRange(ctx, lo, job.Next, job.Addresses)
	if err != nil {
		return false, fmt.Errorf("backfill %d-%d of %d addresses: %w", lo, job.Next, len(job.Addresses), err)
	}
	if err := f.cfg.Store.StoreBackfill(ctx, f.cfg.Chain, job, txs, int64(lo)-1); err != nil {
		return false, err
	}
	f.learnTokens(job.Addresses, txs)
	f.metrics.txs.Add(float64(len(txs)))
	switch took := f.cfg.Clock.Now().Sub(start); {
	case took < backfillSliceTime/2:
		f.sliceWidth = 2 * width
	case took > 2*backfillSliceTime && width > 1:
		f.sliceWidth = width / 2
	default:
		f.sliceWidth = width
	}
	if lo == job.Low {
		f.log.Info("fetcher: backfill done", "addresses", len(job.Addresses), "from", job.Low)
		return true, nil
	}
	return false, nil
}

// backfillRange returns the transactions of blocks from to to that touch
// addresses: by history (bisection on state, logs by address) when
// BackfillAll and the node keeps the state, else by the Backfiller.
func (f *Fetcher) backfillRange(ctx context.Context, from, to uint64, addresses []string) ([]Transaction, error) {
	if f.cfg.BackfillAll {
		if ss, ok := f.cfg.Source.(StateSource); ok {
			txs, err := f.history(ctx, ss, from, to, addresses)
			if !errors.Is(err, ErrNoState) {
				return txs, f.nodeErr(err)
			}
			f.log.Warn("fetcher: the node lost the state of old blocks during a full-history backfill; scanning blocks instead", "from", from, "to", to, "err", err)
		}
	}
	txs, err := f.cfg.Backfiller.Backfill(ctx, from, to, addresses)
	return txs, f.nodeErr(err)
}

// history finds the transactions of blocks from to to touching addresses
// without reading every block: the token transfers from eth_getLogs with
// the addresses in topic 1, then topic 2 (Source.Transfers adapts its
// ranges to the node's limits); the native movements by bisecting the
// range on the addresses' balance and nonce; then it reads only the blocks
// where something changed, whole (every receipt, every Transfer log, the
// traces when the node has them), so that each transaction is stored with
// all its movements.
func (f *Fetcher) history(ctx context.Context, ss StateSource, from, to uint64, addresses []string) ([]Transaction, error) {
	logs, err := f.cfg.Source.Transfers(ctx, from, to, addresses)
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
	set := make(map[string]bool, len(addresses))
	for _, a := range addresses {
		set[a] = true
	}
	numbers := sortedKeys(changed)
	txs := make([][]Transaction, len(numbers))
	err = parallel(ctx, len(numbers), 4, func(ctx context.Context, i int) error {
		var err error
		txs[i], err = f.backfillBlock(ctx, numbers[i], set)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := f.tokenInfo(ctx, txs); err != nil {
		return nil, err
	}
	return slices.Concat(txs...), nil
}

// backfillBlock reads block number whole and returns its transactions
// touching set.
func (f *Fetcher) backfillBlock(ctx context.Context, number uint64, set map[string]bool) ([]Transaction, error) {
	blocks, err := f.cfg.Source.Blocks(ctx, number, number)
	if err != nil {
		return nil, err
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("block %d: the node does not have it: %w", number, ErrUnavailable)
	}
	b := blocks[0]
	all, logs, err := f.cfg.Source.BlockReceipts(ctx, b.Block)
	if err != nil {
		return nil, err
	}
	var traced []InternalMove
	if f.traceAPI != "" {
		if traced, err = f.tracer.Traces(ctx, b, f.traceAPI); err != nil {
			return nil, fmt.Errorf("traces of block %d: %w", number, err)
		}
	}
	m := matchBlock(b, logs, traced, func(a string) bool { return set[a] })
	byHash := make(map[string]Receipt, len(all))
	for _, r := range all {
		byHash[r.TxHash] = r
	}
	receipts := make([]Receipt, len(m.hashes))
	for i, h := range m.hashes {
		r, ok := byHash[h]
		if !ok {
			return nil, fmt.Errorf("block %d %s: no receipt for %s: %w", b.Number, b.Hash, h, ErrUnavailable)
		}
		receipts[i] = r
	}
	return m.transactions(b, receipts), nil
}

// learnTokens hands the tokens the backfilled transactions moved for
// addresses to the head follower, which reads their balances.
func (f *Fetcher) learnTokens(addresses []string, txs []Transaction) {
	set := make(map[string]bool, len(addresses))
	for _, a := range addresses {
		set[a] = true
	}
	f.learnedMu.Lock()
	defer f.learnedMu.Unlock()
	for _, tx := range txs {
		for _, tr := range tx.Transfers {
			if tr.Asset != AssetERC20 {
				continue
			}
			for _, a := range []string{tr.From, tr.To} {
				if set[a] && !slices.Contains(f.learned[a], tr.Contract) {
					if f.learned == nil {
						f.learned = make(map[string][]string)
					}
					f.learned[a] = append(f.learned[a], tr.Contract)
				}
			}
		}
	}
}

// takeLearned adds the tokens backfills found to the addresses' known
// tokens and reads the balances of the addresses that hold new ones, at
// cp, into their statements.
func (f *Fetcher) takeLearned(ctx context.Context, cp Block) error {
	f.learnedMu.Lock()
	learned := f.learned
	f.learned = nil
	f.learnedMu.Unlock()
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
	if len(fresh) == 0 {
		return nil
	}
	bals, err := f.readBalances(ctx, fresh, cp.Number)
	if err != nil {
		return err
	}
	return f.reconcileStored(ctx, bals, cp)
}
