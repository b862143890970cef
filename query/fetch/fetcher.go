package fetch

// Fetcher: configuration and construction, and small helpers the steps share.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/wharfhq/wharf/query"
)

// Store is the storage a Fetcher writes: FetchStore, and the
// stored balances, from which it learns the tokens an address holds.
type Store interface {
	query.FetchStore
	// Balances returns the stored balances of an address.
	Balances(ctx context.Context, chain, address string) ([]query.Balance, error)
}

// Config configures a Fetcher. Chain, Store and Source are
// required; the rest have defaults.
type Config struct {
	Chain  string
	Store  Store
	Source query.Source
	// Clock paces Run and stamps health; default SystemClock.
	Clock  query.Clock
	Logger *slog.Logger
	// Metrics registers the fetcher's metrics, labelled with the chain;
	// nil registers nothing.
	Metrics prometheus.Registerer

	// Native is the chain's own coin; zero: from the table of well-known
	// networks by the node's chain ID (KnownNetwork).
	Native query.NativeCoin

	// Confirmations is how many blocks must sit on a block before it is
	// stored (0: the head itself).
	Confirmations uint64
	// BackfillBlocks is how many blocks before the checkpoint a new
	// subscription is backfilled; default 1000.
	BackfillBlocks uint64
	// BackfillAll backfills a new subscription's whole history, from the
	// genesis, without reading every block (see history), when the node
	// keeps the state of old blocks (an archive node); on a node that does
	// not, it says so and backfills BackfillBlocks blocks.
	BackfillAll bool
	// BackfillSlice is the first width, in blocks, of the slices a
	// backfill stores one at a time (each its checkpoint); it then adapts
	// so that a slice takes about two seconds. Default 1024.
	BackfillSlice uint64
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
	// Interval; default DefaultMaxBackoff.
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
	// Holder names this replica in the chain's lease, such as host:pid;
	// default "fetcher".
	Holder string
	// LeaseTTL is how long the chain's lease lasts unless renewed; default
	// 15 s. The leader renews it every third of it; a follower tries to
	// take it every fifth, so it takes over at most LeaseTTL/5 after the
	// lease lapsed.
	LeaseTTL time.Duration
	// Traces says whether internal movements are read from the node's
	// trace API: TracesAuto (the default: when the node has one),
	// TracesOn (a node without one is an error) or TracesOff.
	Traces string
}

// Values of Config.Traces.
const (
	TracesAuto = "auto"
	TracesOn   = "on"
	TracesOff  = "off"
)

// DefaultMaxBackoff is Config.MaxBackoff when it is zero: after a node
// outage of any length, fetching resumes within it of the node's return
// (issue 21, N1: with a minute, 31 s after a 33 s outage). A failing
// step costs the node one call or a few: retrying every 5 s is no load.
const DefaultMaxBackoff = 5 * time.Second

// DefaultLeaseTTL is Config.LeaseTTL when it is zero.
const DefaultLeaseTTL = 15 * time.Second

// Fetcher keeps the balances and transactions of a chain's tracked
// addresses current from a Source. One pass over each new block serves
// every subscription of the chain. FetchOnce does one step; Run repeats
// it while this process leads the chain. Steps must not run concurrently
// (call FetchOnce or Run, not both); Health may be called at any time.
type Fetcher struct {
	cfg     Config
	log     *slog.Logger
	metrics fetchMetrics

	// ready is set once the head follower has probed the node: the
	// backfills, which run beside it, wait for it.
	ready atomic.Bool
	// wake tells the backfill loop that a step ended (wakeBackfills).
	wake chan struct{}
	// sliceWidth is the backfill's slice, in blocks; the backfill's alone.
	sliceWidth uint64
	// learned are the tokens backfills found, per address, for the head
	// follower to take (takeLearned).
	learnedMu sync.Mutex
	learned   map[string][]string
	// noStateSaid is set once the missing state of old blocks was logged.
	noStateSaid bool
	// syncWaitSaid is set once new subscriptions were said to wait for
	// the fetcher to catch up (syncBalances), until one sync reads.
	syncWaitSaid bool

	// checked is set once CheckChain has passed; native is then the
	// chain's coin.
	checked atomic.Bool
	native  query.NativeCoin

	// target is the newest block with enough confirmations, as of the
	// current step.
	target uint64
	// dense is true while most scanned blocks touch a tracked address: then
	// every block's receipts are read instead of the Transfer logs.
	dense bool

	// tokens are the ERC-20 contracts each address has held, loaded from
	// the store on first need and grown as blocks touch it.
	tokens map[string][]string
	// tracer and traceAPI read internal movements; traceAPI is "" when
	// the node has no trace API or traces are off. probed is true once
	// the node was asked.
	tracer   query.Tracer
	traceAPI string
	probed   bool
	// heads are the running balances of the statements touched in this
	// step, loaded from the store on first need (headsLoaded, by address).
	heads       map[query.Holding]*head
	headsLoaded map[string]bool
	// mismatched are the assets whose disagreement was logged, once.
	mismatched map[query.Holding]bool

	// refresh walks the tracked addresses for the scheduled refresh.
	refreshAfter string    // last address refreshed in the current round
	refreshNext  time.Time // when the next round starts
	refreshStart time.Time // when the current round started
	// refreshAsync: Run's refresh worker (refresh.go) reads the balances
	// and queues them in refreshQueue for the steps to store.
	refreshAsync bool
	refreshMu    sync.Mutex
	refreshQueue []refreshed

	mu           sync.Mutex // guards the health fields
	lastOK       time.Time
	lastErr      error
	failingSince time.Time
	caughtUp     bool
	newest       time.Time // time of the newest stored block
	head         uint64    // the node's head at the last step
}

// New returns a Fetcher for cfg.Chain.
func New(cfg Config) (*Fetcher, error) {
	if cfg.Chain == "" || cfg.Store == nil || cfg.Source == nil {
		return nil, errors.New("fetcher: Chain, Store and Source are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = query.SystemClock{}
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
		cfg.MaxBackoff = DefaultMaxBackoff
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
	if cfg.Holder == "" {
		cfg.Holder = "fetcher"
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	switch cfg.Traces {
	case "":
		cfg.Traces = TracesAuto
	case TracesAuto, TracesOn, TracesOff:
	default:
		return nil, fmt.Errorf("fetcher: traces %q: want auto, on or off", cfg.Traces)
	}
	f := &Fetcher{
		cfg:        cfg,
		log:        cfg.Logger.With("chain", cfg.Chain),
		tokens:     make(map[string][]string),
		wake:       make(chan struct{}, 1),
		mismatched: make(map[query.Holding]bool),
	}
	f.resetHeads()
	// The first round of the scheduled refresh comes half an interval
	// after the start, as every next one after the last.
	f.refreshNext = cfg.Clock.Now().Add(cfg.RefreshInterval / 2)
	if err := f.metrics.register(cfg.Metrics, cfg.Chain); err != nil {
		return nil, err
	}
	return f, nil
}

// parallel runs f(0..n-1) with at most limit at once and returns the
// first error, cancelling the rest; the ones not started yet are not
// started.
func parallel(ctx context.Context, n, limit int, f func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for i := range n {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return f(gctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
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
