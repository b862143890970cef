package fetch

// Fetcher: configuration and construction, and small helpers the steps share.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// Store is the storage a Fetcher writes: FetchStore, and the
// stored balances, from which it learns the tokens an address holds.
type Store interface {
	query.FetchStore
	// Balances returns the stored balances of an address.
	Balances(ctx context.Context, chain, address string) ([]query.Balance, error)
}

// Config configures a Fetcher. Chain, Store and Reader are required; the
// rest have defaults.
type Config struct {
	Chain string
	Store Store
	// Reader reads the chain through the seam, the family's: its
	// identity, head and headers, the activity of new blocks, and what
	// its optional capabilities (query/chain) tell: balances to check
	// the statements against, internal movements, token metadata, the
	// finalized block.
	Reader chain.Reader
	// Clock paces Run and stamps health; default SystemClock.
	Clock query.Clock
	// Logger receives the fetcher's log; nil discards it.
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
	// IdentityInterval is how often the node's chain identity (chain ID
	// and genesis) is read again while steps succeed; after a failed step
	// it is read at once. Default DefaultIdentityInterval.
	IdentityInterval time.Duration
	// MaxReorgDepth is the deepest reorg applied; a deeper one stops the
	// chain, deleting nothing, until an operator resumes or rewinds it.
	// Reorgs below the node's finalized block are refused whatever it
	// says. Default DefaultMaxReorgDepth.
	MaxReorgDepth uint64
	// StallAfter: Health fails when the head follower has not advanced
	// (no step ended well) for this long: a hung or lying node shows
	// within it. Default DefaultStallAfter.
	StallAfter time.Duration
	// Internals says whether internal movements are read from the node's
	// trace API: InternalsAuto (the default: when the node has one),
	// InternalsOn (a node without one is an error) or InternalsOff.
	Internals string
}

// Values of Config.Internals (the --traces flag's).
const (
	InternalsAuto = "auto"
	InternalsOn   = "on"
	InternalsOff  = "off"
)

// DefaultMaxBackoff is Config.MaxBackoff when it is zero: after a node
// outage of any length, fetching resumes within it of the node's return
// (with a minute, 31 s after a 33 s outage). A failing
// step costs the node one call or a few: retrying every 5 s is no load.
const DefaultMaxBackoff = 5 * time.Second

// DefaultIdentityInterval is Config.IdentityInterval when it is zero.
const DefaultIdentityInterval = 30 * time.Second

// DefaultMaxReorgDepth is Config.MaxReorgDepth when it is zero: twice
// the depth at which Ethereum's blocks are final (two epochs of 32
// slots), so that no reorg of a proof-of-stake Ethereum chain reaches it
// and a node serving another chain does.
const DefaultMaxReorgDepth = 128

// DefaultStallAfter is Config.StallAfter when it is zero: five of the
// default Interval, where a healthy follower ends a step every one.
const DefaultStallAfter = 10 * time.Second

// DefaultLeaseTTL is Config.LeaseTTL when it is zero.
const DefaultLeaseTTL = 15 * time.Second

// Fetcher keeps the balances and transactions of a chain's tracked
// addresses current from a Source. One pass over each new block serves
// every subscription of the chain. FetchOnce does one step; Run repeats
// it while this process leads the chain. Steps must not run concurrently
// (call FetchOnce or Run, not both; CheckChain and Probe before Run or
// between steps); Health and InternalsSource may be called at any time.
//
// Its state is split by the goroutine that owns it (the package comment
// says which): the head follower's, the backfiller's and the refresher's;
// what they share is read-only (core, chainFacts) or a type that says how
// it is shared (health, handoff).
type Fetcher struct {
	core    *core
	follow  *follower
	back    *backfiller
	refresh *refresher
}

// core is what every worker of a fetcher reads and none writes: the
// configuration and logger, the metrics (safe for concurrent use), and
// the health record (behind its own lock).
type core struct {
	cfg     Config
	log     *slog.Logger
	metrics *fetchMetrics
	health  *health
	// headRead is signalled when the head follower reads a new head
	// of the node, or its health changes, for renew.
	headRead chan struct{}
}

// chainFacts are what the head follower learns of the chain and the node
// before the other workers start (CheckChain, Probe); they get a copy, and
// nothing changes it after.
type chainFacts struct {
	native query.NativeCoin
	// internalsSource is the trace API the family reads internal
	// movements from (chain.Internals); "" when the node has none, traces
	// are off, or the family has no internal movements.
	internalsSource string
	// covered says the statement rows cover every movement (their
	// Internals): internal ones from internalsSource, or a family that has
	// none (no chain.Internals).
	covered bool
}

// New returns a Fetcher for cfg.Chain.
func New(cfg Config) (*Fetcher, error) {
	if cfg.Chain == "" || cfg.Store == nil || cfg.Reader == nil {
		return nil, errors.New("fetcher: Chain, Store and Reader are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = query.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
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
	if cfg.IdentityInterval <= 0 {
		cfg.IdentityInterval = DefaultIdentityInterval
	}
	if cfg.MaxReorgDepth == 0 {
		cfg.MaxReorgDepth = DefaultMaxReorgDepth
	}
	if cfg.StallAfter <= 0 {
		cfg.StallAfter = DefaultStallAfter
	}
	switch cfg.Internals {
	case "":
		cfg.Internals = InternalsAuto
	case InternalsAuto, InternalsOn, InternalsOff:
	default:
		return nil, fmt.Errorf("fetcher: traces %q: want auto, on or off", cfg.Internals)
	}
	c := &core{
		cfg:      cfg,
		log:      cfg.Logger.With("chain", cfg.Chain),
		metrics:  &fetchMetrics{},
		health:   &health{},
		headRead: make(chan struct{}, 1),
	}
	if err := c.metrics.register(cfg.Metrics, cfg.Chain); err != nil {
		return nil, err
	}
	var (
		learned   = &handoff[learnedTokens]{}
		refreshed = &handoff[refreshed]{}
		wake      = make(chan struct{}, 1)
		// The first round of the scheduled refresh comes half an interval
		// after the start, as every next one after the last.
		firstRefresh = cfg.Clock.Now().Add(cfg.RefreshInterval / 2)
	)
	f := &Fetcher{
		core:    c,
		follow:  newFollower(c, learned, refreshed, wake),
		back:    &backfiller{core: c, learned: learned, wake: wake},
		refresh: &refresher{core: c, out: refreshed, next: firstRefresh},
	}
	f.follow.inlineRefresh = f.refresh // until Run starts it in a goroutine
	return f, nil
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
