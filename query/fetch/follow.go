package fetch

// Following the head: reading new blocks ahead of storing them, storing them in batches, and rewinding after a reorg.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wharfhq/wharf/query"
)

// follower is the head follower's state: the goroutine that runs Run's
// steps (or calls FetchOnce) owns it, and the reader goroutine of
// storeBlocks borrows the scanning part (tokens, heads,
// mismatched) while the step waits for it.
type follower struct {
	*core

	// checked and probed are set once CheckChain and Probe have passed;
	// facts then hold the chain's coin and the trace API, which the other
	// workers get a copy of (settled).
	checked, probed bool
	facts           chainFacts
	// identityDue is when the chain's identity is read again
	// (IdentityInterval after the last check).
	identityDue time.Time
	// accept says the operator resumed the chain after a refused reorg:
	// the next one is applied whatever its depth. rewound is set by a
	// rewind of this step; reorgsInRow counts the steps in a row that
	// rewound or stored nothing while behind.
	accept      bool
	rewound     bool
	reorgsInRow int

	// learned are the tokens the backfiller found (takeLearned);
	// refreshed the balances the refresher read (takeRefreshed).
	// inlineRefresh is the refresher whose work each step runs under
	// FetchOnce alone; nil while Run's refresher works in a goroutine of
	// its own. wake tells the backfiller that a step ended.
	learned       *handoff[learnedTokens]
	refreshed     *handoff[refreshed]
	inlineRefresh *refresher
	wake          chan<- struct{}

	// marked is what the last markFinality recorded.
	marked finalityMark

	// noStateSaid is set once the missing state of old blocks was logged.
	noStateSaid bool
	// syncWaitSaid is set once new subscriptions were said to wait for
	// the fetcher to catch up (syncBalances), until one sync reads.
	syncWaitSaid bool

	// target is the newest block with enough confirmations, as of the
	// current step.
	target uint64
	// tokens are the ERC-20 contracts each address has held, loaded from
	// the store on first need and grown as blocks touch it.
	tokens map[string][]string
	// heads are the running balances of the statements touched in this
	// step, loaded from the store on first need (headsLoaded, by address).
	heads       map[query.Holding]*running
	headsLoaded map[string]bool
	// rowless are the holdings without a head found without statement
	// rows either, this step (loadHeads).
	rowless map[query.Holding]bool
	// mismatched are the assets whose disagreement was logged, once.
	mismatched map[query.Holding]bool
	// pace is when the next check of the statements is due, on a Reader
	// whose balances cost a scan (pace.go).
	pace checkPace
	// historyLow is the first block of the history of each followed
	// address whose backfill has ended, as of the current step: a token
	// first seen later is looked at from there (anchor).
	historyLow map[string]uint64
}

func newFollower(c *core, learned *handoff[learnedTokens], refreshed *handoff[refreshed], wake chan<- struct{}) *follower {
	f := &follower{
		core:       c,
		learned:    learned,
		refreshed:  refreshed,
		wake:       wake,
		tokens:     make(map[string][]string),
		mismatched: make(map[query.Holding]bool),
	}
	f.resetHeads()
	return f
}

// settled returns the chain's facts once CheckChain and Probe have passed.
func (f *follower) settled() (chainFacts, bool) {
	return f.facts, f.checked && f.probed
}

// step is one step of the head follower (FetchOnce without the
// backfills); more reports that blocks remain to be fetched.
func (f *follower) step(ctx context.Context) (more bool, err error) {
	f.stepStarted()
	more, err = f.fetch(ctx)
	if err != nil {
		// The next step may reach another node behind the same URL.
		f.checked = false
	}
	f.record(err)
	if err == nil {
		// Tell the backfiller (which may have new jobs) that a step ended.
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
	return more, err
}

// storeFirst stores block number as the first checkpoint of the chain.
func (f *follower) storeFirst(ctx context.Context, number uint64, set map[string]bool) (query.Block, error) {
	acts, _, err := f.activity(ctx, number, number, set)
	if err != nil {
		return query.Block{}, err
	}
	if len(acts) == 0 {
		return query.Block{}, fmt.Errorf("fetch %s: block %d: %w", f.cfg.Chain, number, query.ErrUnavailable)
	}
	c, err := f.scan(ctx, acts, set)
	if err != nil {
		return query.Block{}, err
	}
	if _, err := f.storeChunks(ctx, []chunk{c}); err != nil {
		return query.Block{}, err
	}
	return acts[0].Block, nil
}

// chunk is a run of consecutive blocks scanned and ready to store.
type chunk struct {
	blocks   []query.Block
	txs      [][]query.Transaction   // matched transactions, per block
	balances []query.Balance         // of the touched addresses, at the last block
	changes  [][]query.BalanceChange // statement rows, per block
	heads    [][]query.StatementHead // where the statements moved by each block stand after it
	touched  [][]string              // the tracked addresses each block touched
	reorg    bool                    // the first block does not extend the checkpoint
	err      error
}

// maxReorgsInRow is how many steps in a row may rewind or store nothing
// while behind before the node is taken for failing.
const maxReorgsInRow = 3

// chunkBlocks is the number of blocks scanned together: the blocks are
// read in one batch, the Transfer logs in one call.
const chunkBlocks = 16

// writeChunks is the most chunks stored in one database transaction, and
// how many the reader may have ready ahead of the writer.
const writeChunks = 8

// storeBlocks fetches the blocks after cp up to end, checks that they
// extend the stored chain, and stores them; it returns how many it
// stored. Reading runs ahead of writing, so that the node and the
// database work at the same time, and the writer takes every chunk read
// meanwhile into its next transaction: when the database is the slower,
// its batches grow, and with them the share of index pages that one
// commit writes for several blocks.
func (f *follower) storeBlocks(ctx context.Context, cp query.Block, end uint64, set map[string]bool) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	chunks := make(chan chunk, writeChunks)
	go func() {
		defer close(chunks)
		f.readChunks(ctx, cp, end, set, chunks)
	}()
	defer func() {
		cancel()
		for range chunks { // wait for the reader to end
		}
	}()
	stored := 0
	for c := range chunks {
		batch := gather(c, chunks)
		// An error or a reorg comes last: the chunks before it are stored.
		last := batch[len(batch)-1]
		if last.err != nil || last.reorg {
			batch = batch[:len(batch)-1]
		}
		if len(batch) > 0 {
			n, err := f.storeChunks(ctx, batch)
			stored += n
			if err != nil {
				return stored, err
			}
		}
		switch {
		case last.err != nil:
			return stored, last.err
		case last.reorg:
			return stored, f.rewind(ctx, cp)
		}
	}
	return stored, nil
}

// gather returns c and the chunks already waiting after it, up to
// writeChunks, without waiting for more.
func gather(c chunk, chunks <-chan chunk) []chunk {
	batch := []chunk{c}
	for len(batch) < writeChunks && c.err == nil && !c.reorg {
		select {
		case next, ok := <-chunks:
			if !ok {
				return batch
			}
			batch = append(batch, next)
			c = next
		default:
			return batch
		}
	}
	return batch
}

// readChunks reads and scans the blocks after cp up to end, a chunk at a
// time, until the end, an error, or the chain no longer extends what was
// read (the rest is for the next step).
func (f *follower) readChunks(ctx context.Context, cp query.Block, end uint64, set map[string]bool, out chan<- chunk) {
	send := func(c chunk) bool {
		select {
		case out <- c:
			return true
		case <-ctx.Done():
			return false
		}
	}
	prev := cp
	for lo := cp.Number + 1; lo <= end; lo += chunkBlocks {
		hi := min(end, lo+chunkBlocks-1)
		acts, replaced, err := f.activity(ctx, lo, hi, set)
		if err != nil {
			send(chunk{err: err})
			return
		}
		if len(acts) == 0 {
			if lo == cp.Number+1 && !replaced {
				send(chunk{err: f.nodeErr(fmt.Errorf("fetch %s: the node's head is at least %d but it serves no block %d: %w", f.cfg.Chain, end, lo, query.ErrUnavailable))})
			}
			return
		}
		// A checkpoint without a hash is a rewind below the first stored
		// block: any parent will do.
		if prev.Hash != "" && acts[0].Block.ParentHash != prev.Hash {
			if lo == cp.Number+1 {
				send(chunk{reorg: true})
			}
			return // the chain moved while we read: the rest next step
		}
		// Activity links the blocks it returns, and returns fewer when one
		// was replaced while it read: the rest is for the next step.
		whole := len(acts) == int(hi-lo+1)
		c, err := f.scan(ctx, acts, set)
		if err != nil {
			send(chunk{err: err})
			return
		}
		if len(c.blocks) == 0 || !send(c) || !whole {
			return
		}
		prev = acts[len(acts)-1].Block
	}
}

// storeChunks stores the blocks of consecutive chunks and moves the
// checkpoint to the last of them in one database transaction (one commit
// for all, not one per block). Each chunk's balances, read at its last
// block, go with that block.
func (f *follower) storeChunks(ctx context.Context, cs []chunk) (int, error) {
	var (
		data []query.BlockData
		txs  int
	)
	for _, c := range cs {
		for i, b := range c.blocks {
			d := query.BlockData{Block: b, Txs: c.txs[i]}
			if i < len(c.changes) {
				d.Changes = c.changes[i]
			}
			if i < len(c.heads) {
				d.Heads = c.heads[i]
			}
			data = append(data, d)
			txs += len(c.txs[i])
		}
		if len(c.blocks) > 0 {
			data[len(data)-1].Balances = c.balances
		}
	}
	if len(data) == 0 {
		return 0, nil
	}
	if err := f.cfg.Store.StoreBlocks(ctx, f.cfg.Chain, data); err != nil {
		return 0, err
	}
	last := data[len(data)-1].Block
	f.metrics.blocks.Add(float64(len(data)))
	f.metrics.txs.Add(float64(txs))
	f.metrics.checkpoint.Set(float64(last.Number))
	f.setCaughtUp(false, last)
	return len(data), nil
}

// replaced reports whether the stored chain up to cp is no longer the
// node's: its block of cp's number is another than cp, or, where the
// node's chain ends below cp (at head), its block at head is another than
// the one stored there (a reorg to a branch shorter than the stored one,
// which a UTXO chain of more work can be). A node whose chain ends below
// cp on the stored blocks (a node resynchronising) replaces nothing: what
// is stored stays until the node's chain is taller again.
func (f *follower) replaced(ctx context.Context, cp query.Block, head uint64) (bool, error) {
	n := min(cp.Number, head)
	blocks, err := f.cfg.Reader.Headers(ctx, n, n)
	if err != nil {
		return false, f.nodeErr(err)
	}
	if len(blocks) != 1 {
		return false, nil
	}
	if n == cp.Number {
		return blocks[0].Hash != cp.Hash, nil
	}
	stored, err := f.cfg.Store.StoredBlock(ctx, f.cfg.Chain, n)
	if errors.Is(err, query.ErrNotFound) {
		return false, nil // below the first stored block
	}
	if err != nil {
		return false, err
	}
	return blocks[0].Hash != stored.Hash, nil
}

// rewind handles a reorg under the checkpoint cp: it walks back to the
// newest stored block that is still on the node's chain and rewinds the
// store to it; the next step fetches the new blocks. A chain that no
// longer extends the stored one may be another chain behind the same
// URL: the node's identity is read first. A fork deeper than
// MaxReorgDepth, or below the node's finalized block, is refused:
// nothing is deleted, and the chain is stopped (StopChain) until an
// operator resumes or rewinds it.
func (f *follower) rewind(ctx context.Context, cp query.Block) error {
	if err := f.verifyIdentity(ctx); err != nil {
		return err
	}
	limit := f.cfg.MaxReorgDepth
	if f.accept {
		limit = ^uint64(0)
	}
	n := cp.Number
	// above is the lowest stored block walked, and the node's block of
	// its number.
	var above, aboveNode query.Block
	for depth := uint64(0); n > 0; depth++ {
		if depth > limit {
			return f.refuse(ctx, cp, fmt.Sprintf("a reorg deeper than %d blocks (--max-reorg-depth) under block %d", limit, cp.Number))
		}
		stored, err := f.cfg.Store.StoredBlock(ctx, f.cfg.Chain, n)
		if errors.Is(err, query.ErrNotFound) {
			// Below the first stored block: the fork is under it only when
			// the node's block there has the same parent; else the node's
			// chain shares no stored block at all.
			if above.Number != 0 && aboveNode.ParentHash != above.ParentHash && !f.accept {
				return f.refuse(ctx, cp, fmt.Sprintf("the node's chain shares no block with the stored one, down to the first stored block %d", above.Number))
			}
			break
		}
		if err != nil {
			return err
		}
		blocks, err := f.cfg.Reader.Headers(ctx, n, n)
		if err != nil {
			return f.nodeErr(err)
		}
		if len(blocks) == 1 && blocks[0].Hash == stored.Hash {
			break
		}
		above, aboveNode = stored, query.Block{}
		if len(blocks) == 1 {
			aboveNode = blocks[0]
		}
		n--
	}
	if fin := f.finalized(ctx); n < fin && !f.accept {
		return f.refuse(ctx, cp, fmt.Sprintf("a reorg to block %d, below block %d, which the node says is finalized", n, fin))
	}
	f.log.Warn("fetcher: reorg", "checkpoint", cp.Number, "fork", n)
	f.metrics.reorgs.Inc()
	if err := f.cfg.Store.Rewind(ctx, f.cfg.Chain, n); err != nil {
		return err
	}
	f.rewound, f.marked = true, finalityMark{} // the rewind lowered the marks

	if f.accept {
		if err := f.cfg.Store.DoneChainOrders(ctx, f.cfg.Chain, true, -1); err != nil {
			return err
		}
		f.accept = false
	}
	f.metrics.checkpoint.Set(float64(n))
	return nil
}

// refuse stops the chain rather than apply the reorg under cp that why
// says, and returns the error that says so.
func (f *follower) refuse(ctx context.Context, cp query.Block, why string) error {
	reason := fmt.Sprintf("%s: refused, nothing deleted; the stored block %d is %s; "+
		"`addrd chain resume --chain %s` applies the reorg, `addrd chain rewind --chain %s --to N` fetches again from block N+1",
		why, cp.Number, cp.Hash, f.cfg.Chain, f.cfg.Chain)
	f.log.Error("fetcher: chain stopped", "reason", reason)
	if err := f.cfg.Store.StopChain(ctx, f.cfg.Chain, reason); err != nil {
		return err
	}
	return fmt.Errorf("fetch %s: %s: %w", f.cfg.Chain, reason, query.ErrChainStopped)
}

// orders reads the chain's stop and carries out the operator's orders: a
// stopped chain is not fetched; a rewind asked for is made; a resume
// accepts the next reorg.
func (f *follower) orders(ctx context.Context) error {
	s, err := f.cfg.Store.ChainStop(ctx, f.cfg.Chain)
	if err != nil {
		return err
	}
	if s.Stopped() {
		return fmt.Errorf("fetch %s: stopped since %s: %s: %w", f.cfg.Chain, s.Since.Format(time.RFC3339), s.Reason, query.ErrChainStopped)
	}
	f.accept = s.Accept
	if s.RewindTo < 0 {
		return nil
	}
	cp, ok, err := f.cfg.Store.Checkpoint(ctx, f.cfg.Chain)
	if err != nil {
		return err
	}
	if ok && uint64(s.RewindTo) < cp.Number {
		f.log.Warn("fetcher: rewinding as the operator asked", "checkpoint", cp.Number, "to", s.RewindTo)
		if err := f.cfg.Store.Rewind(ctx, f.cfg.Chain, uint64(s.RewindTo)); err != nil {
			return err
		}
		f.marked = finalityMark{}
		f.metrics.checkpoint.Set(float64(s.RewindTo))
	}
	return f.cfg.Store.DoneChainOrders(ctx, f.cfg.Chain, false, s.RewindTo)
}

func (f *follower) fetch(ctx context.Context) (bool, error) {
	chain := f.cfg.Chain
	if err := f.orders(ctx); err != nil {
		return false, err
	}
	if err := f.checkChain(ctx); err != nil {
		return false, err
	}
	f.resetHeads()
	if err := f.probe(ctx); err != nil {
		return false, err
	}
	tracked, err := f.cfg.Store.Tracked(ctx, chain)
	if err != nil {
		return false, err
	}
	f.metrics.tracked.Set(float64(len(tracked)))
	// The head follower follows the synced addresses, and those it syncs
	// in this step: an address is followed from its sync, the backfill
	// covers it up to there.
	set := make(map[string]bool, len(tracked))
	var fresh []query.Tracked
	f.historyLow = make(map[string]uint64, len(tracked))
	for _, t := range tracked {
		if t.Backfilled {
			f.historyLow[t.Address] = t.HistoryLow
		}
		switch {
		case !t.NeedsSync:
			set[t.Address] = true
		case len(fresh) < f.cfg.SyncBatch:
			fresh = append(fresh, t)
		}
	}
	head, err := f.cfg.Reader.Head(ctx)
	if err != nil {
		return false, f.nodeErr(err)
	}
	f.metrics.head.Set(float64(head))
	f.setNodeHead(head)
	if head < f.cfg.Confirmations {
		return false, nil
	}
	target := head - f.cfg.Confirmations
	f.target = target

	cp, ok, err := f.cfg.Store.Checkpoint(ctx, chain)
	if err != nil {
		return false, err
	}
	if !ok {
		// A new database starts at the confirmed head: the past is the
		// backfill's, for the addresses that want it.
		if cp, err = f.storeFirst(ctx, target, set); err != nil {
			return false, err
		}
	}
	if ok && cp.Number >= target {
		// Caught up, the stored head may have been replaced by a branch
		// no taller (which no new block shows yet): balances read at the
		// tip would be the new branch's.
		replaced, err := f.replaced(ctx, cp, head)
		if err != nil {
			return false, err
		}
		if replaced {
			return true, f.rewind(ctx, cp)
		}
	}
	if len(fresh) > 0 {
		synced, err := f.sync(ctx, fresh, cp)
		if err != nil {
			return false, err
		}
		for _, t := range synced {
			set[t.Address] = true
		}
	}
	if err := f.takeLearned(ctx, cp); err != nil {
		return false, err
	}
	if cp.Number >= target {
		f.setCaughtUp(true, cp)
		if err := f.markFinality(ctx, head); err != nil {
			return false, err
		}
		return false, f.refreshStep(ctx)
	}
	end := min(target, cp.Number+uint64(f.cfg.Batch))
	f.rewound = false
	n, err := f.storeBlocks(ctx, cp, end, set)
	if err != nil {
		return false, err
	}
	if f.rewound || n == 0 {
		// A node whose chain changes at every step, or whose blocks do
		// not chain, is failing rather than reorganising: after a few
		// steps, back off and say so.
		if f.reorgsInRow++; f.reorgsInRow >= maxReorgsInRow {
			return false, f.nodeErr(fmt.Errorf("fetch %s: %d steps in a row stored nothing: the node's blocks after %d do not extend the stored chain, or do not chain: %w", chain, f.reorgsInRow, cp.Number, query.ErrUnavailable))
		}
		return true, nil
	}
	f.reorgsInRow = 0
	if f.accept {
		// The chain extends the stored one again: the resume is spent.
		if err := f.cfg.Store.DoneChainOrders(ctx, chain, true, -1); err != nil {
			return false, err
		}
		f.accept = false
	}
	// Within a batch of the node's head counts as caught up for the lag
	// check: on a chain with blocks faster than steps, every step stores
	// a few, and a node that stops producing must still show.
	f.setCaughtUp(cp.Number+uint64(n)+uint64(f.cfg.Batch) >= target, query.Block{})
	if err := f.markFinality(ctx, head); err != nil {
		return false, err
	}
	// The scheduled refresh runs whatever the cadence: on a fast chain a
	// step nearly always has new blocks to store.
	if err := f.refreshStep(ctx); err != nil {
		return false, err
	}
	return cp.Number+uint64(n) < target, nil
}
