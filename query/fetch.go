package query

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// FetcherStore is the storage a Fetcher writes: FetchStore, and the
// stored balances, from which it learns the tokens an address holds.
type FetcherStore interface {
	FetchStore
	// Balances returns the stored balances of an address.
	Balances(ctx context.Context, chain, address string) ([]Balance, error)
}

// FetcherConfig configures a Fetcher. Chain, Store and Source are
// required; the rest have defaults.
type FetcherConfig struct {
	Chain  string
	Store  FetcherStore
	Source Source
	// Backfiller finds the past transactions of new subscriptions;
	// default BlockScan over Source.
	Backfiller Backfiller
	// Clock paces Run and stamps health; default SystemClock.
	Clock  Clock
	Logger *slog.Logger
	// Metrics registers the fetcher's metrics, labelled with the chain;
	// nil registers nothing.
	Metrics prometheus.Registerer

	// Confirmations is how many blocks must sit on a block before it is
	// stored (0: the head itself).
	Confirmations uint64
	// BackfillBlocks is how many blocks before the checkpoint a new
	// subscription is backfilled; default 1000.
	BackfillBlocks uint64
	// Batch is the most blocks one FetchOnce stores; default 512. Each
	// step first reads the tracked addresses (all of them: 100,000 rows
	// cost a few hundred milliseconds) and new subscriptions are synced
	// between steps, so a step is a few seconds to a minute of catching up.
	Batch int
	// SyncBatch is the most new subscriptions one FetchOnce syncs; default 1000.
	SyncBatch int
	// Interval is how long Run waits between steps once caught up; default 2 s.
	Interval time.Duration
	// MaxBackoff caps the wait after failed steps, which doubles from
	// Interval; default 1 min.
	MaxBackoff time.Duration
	// RefreshInterval is how often every tracked address's balances are
	// read again even when no block touched it; default 10 min.
	RefreshInterval time.Duration
	// RefreshBatch is the most addresses one FetchOnce refreshes; default 500.
	RefreshBatch int
	// LagAfter: Health fails when the newest stored block is older than
	// this while the fetcher is caught up (a node that stopped following
	// the chain); default 10 min, negative disables.
	LagAfter time.Duration
	// LeadRetry is how often a follower tries to become the leader; default 5 s.
	LeadRetry time.Duration
}

// Fetcher keeps the balances and transactions of a chain's tracked
// addresses current from a Source. One pass over each new block serves
// every subscription of the chain. FetchOnce does one step; Run repeats
// it while this process leads the chain. Steps must not run concurrently
// (call FetchOnce or Run, not both); Health may be called at any time.
type Fetcher struct {
	cfg     FetcherConfig
	log     *slog.Logger
	metrics fetchMetrics

	// target is the newest block with enough confirmations, as of the
	// current step.
	target uint64
	// dense is true while most scanned blocks touch a tracked address: then
	// every block's receipts are read instead of the Transfer logs.
	dense bool

	// tokens are the ERC-20 contracts each address has held, loaded from
	// the store on first need and grown as blocks touch it.
	tokens map[string][]string
	// refresh walks the tracked addresses for the scheduled refresh.
	refreshAfter string    // last address refreshed in the current round
	refreshNext  time.Time // when the next round starts

	mu           sync.Mutex // guards the health fields
	lastOK       time.Time
	lastErr      error
	failingSince time.Time
	caughtUp     bool
	newest       time.Time // time of the newest stored block
}

// NewFetcher returns a Fetcher for cfg.Chain.
func NewFetcher(cfg FetcherConfig) (*Fetcher, error) {
	if cfg.Chain == "" || cfg.Store == nil || cfg.Source == nil {
		return nil, errors.New("fetcher: Chain, Store and Source are required")
	}
	if cfg.Backfiller == nil {
		cfg.Backfiller = BlockScan{Source: cfg.Source}
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.BackfillBlocks == 0 {
		cfg.BackfillBlocks = 1000
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 512
	}
	if cfg.SyncBatch <= 0 {
		cfg.SyncBatch = 1000
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = time.Minute
	}
	if cfg.RefreshInterval <= 0 {
		cfg.RefreshInterval = 10 * time.Minute
	}
	if cfg.RefreshBatch <= 0 {
		cfg.RefreshBatch = 500
	}
	if cfg.LagAfter == 0 {
		cfg.LagAfter = 10 * time.Minute
	}
	if cfg.LeadRetry <= 0 {
		cfg.LeadRetry = 5 * time.Second
	}
	f := &Fetcher{
		cfg:    cfg,
		log:    cfg.Logger.With("chain", cfg.Chain),
		tokens: make(map[string][]string),
	}
	if err := f.metrics.register(cfg.Metrics, cfg.Chain); err != nil {
		return nil, err
	}
	return f, nil
}

// Run fetches while this process leads the chain (FetchStore.Lead), one
// step after another while behind, every Interval once caught up, with
// exponential backoff after errors, until ctx ends. It returns nil when
// ctx ends.
func (f *Fetcher) Run(ctx context.Context) error {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		lead, release, err := f.cfg.Store.Lead(ctx, f.cfg.Chain, f.cfg.LeadRetry)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			backoff = f.backoff(backoff)
			f.log.Warn("fetcher: electing a leader", "err", err, "retry", backoff)
			f.wait(ctx, backoff)
			continue
		}
		f.log.Info("fetcher: leading")
		f.metrics.leader.Set(1)
		f.loop(lead)
		f.metrics.leader.Set(0)
		release()
		if ctx.Err() == nil {
			f.log.Warn("fetcher: lost the lead")
		}
	}
	return nil
}

// loop runs steps until lead ends.
func (f *Fetcher) loop(lead context.Context) {
	backoff := time.Duration(0)
	for lead.Err() == nil {
		more, err := f.step(lead)
		var wait time.Duration
		switch {
		case err != nil && lead.Err() != nil:
			return
		case err != nil:
			backoff = f.backoff(backoff)
			wait = backoff
			f.log.Warn("fetcher: step failed", "err", err, "retry", wait)
		case more:
			backoff = 0
		default:
			backoff = 0
			wait = f.cfg.Interval
		}
		if wait > 0 {
			f.wait(lead, wait)
		}
	}
}

func (f *Fetcher) backoff(prev time.Duration) time.Duration {
	if prev == 0 {
		return f.cfg.Interval
	}
	return min(2*prev, f.cfg.MaxBackoff)
}

func (f *Fetcher) wait(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-f.cfg.Clock.After(d):
	}
}

// FetchOnce does one step: syncs new subscriptions (balances at once, then
// a backfill), stores up to Batch new blocks with enough confirmations
// (handling a reorg if the chain changed under the checkpoint), and
// refreshes a share of the balances when they are due. Errors wrap
// ErrUnavailable when the node or the database cannot be reached; Health
// reports them until a step succeeds.
func (f *Fetcher) FetchOnce(ctx context.Context) error {
	_, err := f.step(ctx)
	return err
}

// step is FetchOnce; more reports that blocks remain to be fetched.
func (f *Fetcher) step(ctx context.Context) (more bool, err error) {
	more, err = f.fetch(ctx)
	f.record(err)
	return more, err
}

func (f *Fetcher) fetch(ctx context.Context) (bool, error) {
	chain := f.cfg.Chain
	tracked, err := f.cfg.Store.Tracked(ctx, chain)
	if err != nil {
		return false, err
	}
	f.metrics.tracked.Set(float64(len(tracked)))
	set := make(map[string]bool, len(tracked))
	var fresh []Tracked
	for _, t := range tracked {
		set[t.Address] = true
		if t.NeedsSync && len(fresh) < f.cfg.SyncBatch {
			fresh = append(fresh, t)
		}
	}
	head, err := f.cfg.Source.Head(ctx)
	if err != nil {
		return false, f.nodeErr(err)
	}
	f.metrics.head.Set(float64(head))
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
	if len(fresh) > 0 {
		if err := f.sync(ctx, fresh, cp); err != nil {
			return false, err
		}
	}
	if cp.Number >= target {
		f.setCaughtUp(true, cp)
		return false, f.refresh(ctx, tracked, cp.Number)
	}
	end := min(target, cp.Number+uint64(f.cfg.Batch))
	n, err := f.storeBlocks(ctx, cp, end, set)
	if err != nil {
		return false, err
	}
	return cp.Number+uint64(n) < target, nil
}

// storeFirst stores block number as the first checkpoint of the chain.
func (f *Fetcher) storeFirst(ctx context.Context, number uint64, set map[string]bool) (Block, error) {
	blocks, err := f.cfg.Source.Blocks(ctx, number, number)
	if err != nil {
		return Block{}, f.nodeErr(err)
	}
	if len(blocks) == 0 {
		return Block{}, fmt.Errorf("fetch %s: block %d: %w", f.cfg.Chain, number, ErrUnavailable)
	}
	c, err := f.scan(ctx, blocks, set)
	if err != nil {
		return Block{}, err
	}
	if _, err := f.storeChunks(ctx, []chunk{c}); err != nil {
		return Block{}, err
	}
	return blocks[0].Block, nil
}

// chunk is a run of consecutive blocks scanned and ready to store.
type chunk struct {
	blocks   []SourceBlock
	txs      [][]Transaction // matched transactions, per block
	balances []Balance       // of the touched addresses, at the last block
	reorg    bool            // the first block does not extend the checkpoint
	err      error
}

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
func (f *Fetcher) storeBlocks(ctx context.Context, cp Block, end uint64, set map[string]bool) (int, error) {
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
func (f *Fetcher) readChunks(ctx context.Context, cp Block, end uint64, set map[string]bool, out chan<- chunk) {
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
		blocks, err := f.cfg.Source.Blocks(ctx, lo, hi)
		if err != nil {
			send(chunk{err: f.nodeErr(err)})
			return
		}
		if len(blocks) == 0 {
			return
		}
		// A checkpoint without a hash is a rewind below the first stored
		// block: any parent will do.
		if prev.Hash != "" && blocks[0].ParentHash != prev.Hash {
			if lo == cp.Number+1 {
				send(chunk{reorg: true})
			}
			return // the chain moved while we read: the rest next step
		}
		whole := len(blocks) == int(hi-lo+1)
		for i := 1; i < len(blocks); i++ {
			if blocks[i].ParentHash != blocks[i-1].Hash {
				blocks, whole = blocks[:i], false
				break
			}
		}
		c, err := f.scan(ctx, blocks, set)
		if err != nil {
			send(chunk{err: err})
			return
		}
		if len(c.blocks) == 0 || !send(c) || len(c.blocks) < len(blocks) || !whole {
			return
		}
		prev = blocks[len(blocks)-1].Block
	}
}

// scan scans consecutive blocks for the tracked addresses and reads the
// balances of the addresses they touch, once, at the last block. While
// most blocks match (dense), it reads every block's receipts, whose logs
// serve as its Transfer logs; otherwise (sparse) the Transfer logs of all
// the blocks in one call, and receipts of the blocks that matched only.
// Either way a block costs the same whatever the number of subscriptions.
func (f *Fetcher) scan(ctx context.Context, blocks []SourceBlock, set map[string]bool) (chunk, error) {
	var (
		ms  []matched
		err error
		c   chunk
	)
	if f.dense {
		c, ms, err = f.scanDense(ctx, blocks, set)
	} else {
		c, ms, err = f.scanSparse(ctx, blocks, set)
	}
	if err != nil || len(c.blocks) == 0 {
		return c, err
	}
	touched := make(map[string]bool)
	hits := 0
	for i := range ms {
		if len(ms[i].hashes) > 0 {
			hits++
		}
		for _, a := range ms[i].touched {
			touched[a] = true
		}
		for _, h := range ms[i].hashes {
			for _, t := range ms[i].logs[h] {
				if err := f.learnToken(ctx, set, t); err != nil {
					return chunk{}, err
				}
			}
		}
	}
	f.dense = 2*hits >= len(ms)
	if c.balances, err = f.readBalances(ctx, sortedKeys(touched), c.blocks[len(c.blocks)-1].Number); err != nil {
		return chunk{}, err
	}
	return c, nil
}

// scanSparse reads the Transfer logs of blocks in one call, then the
// receipts of the blocks that matched, a few calls in flight.
func (f *Fetcher) scanSparse(ctx context.Context, blocks []SourceBlock, set map[string]bool) (chunk, []matched, error) {
	first, last := blocks[0].Number, blocks[len(blocks)-1].Number
	logs, err := f.cfg.Source.Transfers(ctx, first, last, nil)
	if err != nil {
		return chunk{}, nil, f.nodeErr(err)
	}
	byBlock := logsByBlock(logs)
	for i, b := range blocks {
		if slices.ContainsFunc(byBlock[b.Number], func(l TokenTransfer) bool { return l.BlockHash != b.Hash }) {
			// The logs come from another chain than the blocks: a reorg
			// while reading; keep the blocks before it.
			blocks = blocks[:i]
			break
		}
	}
	c := chunk{blocks: blocks, txs: make([][]Transaction, len(blocks))}
	tracked := func(a string) bool { return set[a] }
	ms := make([]matched, len(blocks))
	for i, b := range blocks {
		ms[i] = match(b, byBlock[b.Number], tracked)
	}
	err = parallel(ctx, len(blocks), 4, func(ctx context.Context, i int) error {
		if len(ms[i].hashes) == 0 {
			return nil
		}
		receipts, err := f.cfg.Source.Receipts(ctx, blocks[i].Block, ms[i].hashes)
		if err != nil {
			return f.nodeErr(err)
		}
		c.txs[i] = ms[i].transactions(blocks[i], receipts)
		return nil
	})
	if err != nil {
		return chunk{}, nil, err
	}
	return c, ms, nil
}

// scanDense reads every block's receipts, a few calls in flight, and
// matches on the Transfer logs in them.
func (f *Fetcher) scanDense(ctx context.Context, blocks []SourceBlock, set map[string]bool) (chunk, []matched, error) {
	c := chunk{blocks: blocks, txs: make([][]Transaction, len(blocks))}
	tracked := func(a string) bool { return set[a] }
	ms := make([]matched, len(blocks))
	err := parallel(ctx, len(blocks), 4, func(ctx context.Context, i int) error {
		receipts, logs, err := f.cfg.Source.BlockReceipts(ctx, blocks[i].Block)
		if err != nil {
			return f.nodeErr(err)
		}
		ms[i] = match(blocks[i], logs, tracked)
		if len(ms[i].hashes) == 0 {
			return nil
		}
		byHash := make(map[string]Receipt, len(receipts))
		for _, r := range receipts {
			byHash[r.TxHash] = r
		}
		picked := make([]Receipt, len(ms[i].hashes))
		for j, h := range ms[i].hashes {
			r, ok := byHash[h]
			if !ok {
				return fmt.Errorf("block %d %s: no receipt for %s: %w", blocks[i].Number, blocks[i].Hash, h, ErrNotFound)
			}
			picked[j] = r
		}
		c.txs[i] = ms[i].transactions(blocks[i], picked)
		return nil
	})
	if err != nil {
		return chunk{}, nil, err
	}
	return c, ms, nil
}

// storeChunks stores the blocks of consecutive chunks and moves the
// checkpoint to the last of them in one database transaction (one commit
// for all, not one per block). Each chunk's balances, read at its last
// block, go with that block.
func (f *Fetcher) storeChunks(ctx context.Context, cs []chunk) (int, error) {
	var (
		data []BlockData
		txs  int
	)
	for _, c := range cs {
		for i, b := range c.blocks {
			data = append(data, BlockData{Block: b.Block, Txs: c.txs[i]})
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

// parallel runs f(0..n-1) with at most limit at once and returns the
// first error, cancelling the rest.
func parallel(ctx context.Context, n, limit int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, limit)
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(ctx, i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return first
}

// learnToken remembers the token of a transfer for its tracked parties.
func (f *Fetcher) learnToken(ctx context.Context, set map[string]bool, t TokenTransfer) error {
	for _, a := range []string{t.From, t.To} {
		if !set[a] {
			continue
		}
		tokens, err := f.tokensOf(ctx, a)
		if err != nil {
			return err
		}
		if !slices.Contains(tokens, t.Contract) {
			f.tokens[a] = append(tokens, t.Contract)
		}
	}
	return nil
}

// rewind handles a reorg under the checkpoint cp: it walks back to the
// newest stored block that is still on the node's chain and rewinds the
// store to it; the next step fetches the new blocks.
func (f *Fetcher) rewind(ctx context.Context, cp Block) error {
	const maxDepth = 1024
	n := cp.Number
	for depth := 0; ; depth++ {
		if depth > maxDepth || n == 0 {
			break
		}
		stored, err := f.cfg.Store.StoredBlock(ctx, f.cfg.Chain, n)
		if errors.Is(err, ErrNotFound) {
			break // below the first stored block: nothing older to compare
		}
		if err != nil {
			return err
		}
		blocks, err := f.cfg.Source.Blocks(ctx, n, n)
		if err != nil {
			return f.nodeErr(err)
		}
		if len(blocks) == 1 && blocks[0].Hash == stored.Hash {
			break
		}
		n--
	}
	f.log.Warn("fetcher: reorg", "checkpoint", cp.Number, "fork", n)
	f.metrics.reorgs.Inc()
	if err := f.cfg.Store.Rewind(ctx, f.cfg.Chain, n); err != nil {
		return err
	}
	f.metrics.checkpoint.Set(float64(n))
	return nil
}

// sync gives new subscriptions their balances at once and their past
// transactions: the last BackfillBlocks blocks for an address never
// tracked, or the gap since it was last tracked. Then it marks them synced
// up to cp, from where the block scan covers them.
func (f *Fetcher) sync(ctx context.Context, fresh []Tracked, cp Block) error {
	addrs := make([]string, len(fresh))
	for i, t := range fresh {
		addrs[i] = t.Address
	}
	// Balances first: native and known tokens now, so that they are there
	// before a long backfill ends.
	bals, err := f.readBalances(ctx, addrs, cp.Number)
	if err != nil {
		return err
	}
	if err := f.cfg.Store.PutBalances(ctx, bals); err != nil {
		return err
	}
	// One backfill per distinct start block.
	byFrom := make(map[uint64][]string)
	for _, t := range fresh {
		from := t.SyncFrom
		if from == 0 && cp.Number+1 > f.cfg.BackfillBlocks {
			from = cp.Number + 1 - f.cfg.BackfillBlocks
		}
		byFrom[from] = append(byFrom[from], t.Address)
	}
	set := make(map[string]bool, len(addrs))
	for _, a := range addrs {
		set[a] = true
	}
	newTokens := make(map[string]bool)
	for _, from := range sortedKeys(byFrom) {
		txs, err := f.cfg.Backfiller.Backfill(ctx, from, cp.Number, byFrom[from])
		if err != nil {
			return f.nodeErr(err)
		}
		if err := f.cfg.Store.PutTransactions(ctx, f.cfg.Chain, txs); err != nil {
			return err
		}
		for _, tx := range txs {
			for _, tr := range tx.Transfers {
				if tr.Asset != AssetERC20 {
					continue
				}
				for _, a := range []string{tr.From, tr.To} {
					if set[a] && !slices.Contains(f.tokens[a], tr.Contract) {
						f.tokens[a] = append(f.tokens[a], tr.Contract)
						newTokens[a] = true
					}
				}
			}
		}
	}
	if len(newTokens) > 0 {
		bals, err := f.readBalances(ctx, sortedKeys(newTokens), cp.Number)
		if err != nil {
			return err
		}
		if err := f.cfg.Store.PutBalances(ctx, bals); err != nil {
			return err
		}
	}
	if err := f.cfg.Store.MarkSynced(ctx, f.cfg.Chain, addrs, cp.Number); err != nil {
		return err
	}
	f.log.Info("fetcher: synced new subscriptions", "addresses", len(addrs), "block", cp.Number)
	return nil
}

// refresh reads again the balances of the next RefreshBatch tracked
// addresses when a round is due, so that balances a block scan cannot see
// change (fees paid by others, rebasing tokens) do not go stale.
func (f *Fetcher) refresh(ctx context.Context, tracked []Tracked, at uint64) error {
	now := f.cfg.Clock.Now()
	if now.Before(f.refreshNext) || len(tracked) == 0 {
		return nil
	}
	i, _ := slices.BinarySearchFunc(tracked, f.refreshAfter, func(t Tracked, a string) int {
		switch {
		case t.Address < a:
			return -1
		case t.Address > a:
			return 1
		}
		return 0
	})
	if i < len(tracked) && tracked[i].Address == f.refreshAfter {
		i++
	}
	end := min(len(tracked), i+f.cfg.RefreshBatch)
	addrs := make([]string, 0, end-i)
	for _, t := range tracked[i:end] {
		addrs = append(addrs, t.Address)
	}
	if len(addrs) > 0 {
		bals, err := f.readBalances(ctx, addrs, at)
		if err != nil {
			return err
		}
		if err := f.cfg.Store.PutBalances(ctx, bals); err != nil {
			return err
		}
		f.refreshAfter = addrs[len(addrs)-1]
	}
	if end >= len(tracked) {
		f.refreshAfter = ""
		f.refreshNext = now.Add(f.cfg.RefreshInterval)
	}
	return nil
}

// stateWindow is how far behind the confirmed head balances may be read:
// a node that is not an archive keeps the state of its last 128 blocks
// only.
const stateWindow = 64

// readBalances reads the native and every known token balance of
// addresses at block, or at the confirmed head when block is older than
// the node keeps state for (while catching up); balances carry the block
// they were read at.
func (f *Fetcher) readBalances(ctx context.Context, addrs []string, at uint64) ([]Balance, error) {
	if len(addrs) == 0 {
		return nil, nil
	}
	if f.target > at+stateWindow {
		at = f.target
	}
	var qs []BalanceQuery
	for _, a := range addrs {
		tokens, err := f.tokensOf(ctx, a)
		if err != nil {
			return nil, err
		}
		qs = append(qs, BalanceQuery{Address: a})
		for _, c := range tokens {
			qs = append(qs, BalanceQuery{Address: a, Contract: c})
		}
	}
	bals, err := f.cfg.Source.Balances(ctx, at, qs)
	if err != nil {
		return nil, f.nodeErr(err)
	}
	now := f.cfg.Clock.Now()
	for i := range bals {
		bals[i].Chain = f.cfg.Chain
		bals[i].Updated = now
	}
	return bals, nil
}

// tokensOf returns the tokens address has held, from the store on first need.
func (f *Fetcher) tokensOf(ctx context.Context, address string) ([]string, error) {
	if t, ok := f.tokens[address]; ok {
		return t, nil
	}
	stored, err := f.cfg.Store.Balances(ctx, f.cfg.Chain, address)
	if err != nil {
		return nil, err
	}
	tokens := []string{}
	for _, b := range stored {
		if b.Asset == AssetERC20 && !slices.Contains(tokens, b.Contract) {
			tokens = append(tokens, b.Contract)
		}
	}
	f.tokens[address] = tokens
	return tokens, nil
}

// nodeErr counts an error of the node.
func (f *Fetcher) nodeErr(err error) error {
	if err != nil && !errors.Is(err, context.Canceled) {
		f.metrics.nodeErrors.Inc()
	}
	return err
}

// record keeps the outcome of a step for Health and the metrics.
func (f *Fetcher) record(err error) {
	now := f.cfg.Clock.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		f.lastOK, f.lastErr, f.failingSince = now, nil, time.Time{}
		f.metrics.lastSuccess.Set(float64(now.UnixNano()) / 1e9)
		return
	}
	f.metrics.errors.Inc()
	if f.lastErr == nil {
		f.failingSince = now
	}
	f.lastErr = err
}

func (f *Fetcher) setCaughtUp(caughtUp bool, newest Block) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.caughtUp = caughtUp
	if !newest.Time.IsZero() {
		f.newest = newest.Time
	}
}

// Health reports whether fetching works: an error when the last step
// failed (the node or the database is unreachable), or when the fetcher
// is caught up with a node whose newest block is older than LagAfter.
func (f *Fetcher) Health() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lastErr != nil {
		return fmt.Errorf("fetching %s: failing since %s: %w", f.cfg.Chain, f.failingSince.UTC().Format(time.RFC3339), f.lastErr)
	}
	if f.cfg.LagAfter > 0 && f.caughtUp && !f.newest.IsZero() {
		if age := f.cfg.Clock.Now().Sub(f.newest); age > f.cfg.LagAfter {
			return fmt.Errorf("fetching %s: the node lags: its newest block is %s old", f.cfg.Chain, age.Round(time.Second))
		}
	}
	return nil
}

// sortedKeys returns the keys of m in order.
func sortedKeys[K string | uint64, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// fetchMetrics are a fetcher's Prometheus metrics.
type fetchMetrics struct {
	nodeErrors, errors, blocks, txs, reorgs prometheus.Counter
	head, checkpoint, tracked, lastSuccess  prometheus.Gauge
	leader                                  prometheus.Gauge
}

func (m *fetchMetrics) register(reg prometheus.Registerer, chain string) error {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "addrd", Subsystem: "fetch", Name: name, Help: help})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "addrd", Subsystem: "fetch", Name: name, Help: help})
	}
	m.nodeErrors = counter("node_errors_total", "Calls to the chain node that failed.")
	m.errors = counter("step_errors_total", "Fetch steps that failed (node or database).")
	m.blocks = counter("blocks_total", "Blocks scanned and stored.")
	m.txs = counter("transactions_total", "Transactions stored that touch tracked addresses.")
	m.reorgs = counter("reorgs_total", "Reorgs found under the checkpoint.")
	m.head = gauge("head_block", "The node's latest block number.")
	m.checkpoint = gauge("checkpoint_block", "The last block stored.")
	m.tracked = gauge("tracked_addresses", "Addresses with at least one subscription.")
	m.lastSuccess = gauge("last_success_timestamp_seconds", "When a fetch step last succeeded.")
	m.leader = gauge("leader", "1 while this process is the chain's fetcher.")
	if reg == nil {
		return nil
	}
	reg = prometheus.WrapRegistererWith(prometheus.Labels{"chain": chain}, reg)
	for _, c := range []prometheus.Collector{m.nodeErrors, m.errors, m.blocks, m.txs, m.reorgs,
		m.head, m.checkpoint, m.tracked, m.lastSuccess, m.leader} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("fetcher metrics: %w", err)
		}
	}
	return nil
}
