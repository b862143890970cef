package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
)

// fetchFlags are serve's flags for the chain fetchers and the dev chain.
func fetchFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "fetch", Value: true, EnvVars: []string{"ADDRD_FETCH"},
			Usage: "fetch the chains in this process (--fetch=false for API-only replicas; with PostgreSQL one replica per chain is elected)"},
		&cli.Uint64Flag{Name: "confirmations", Value: 2, EnvVars: []string{"ADDRD_CONFIRMATIONS"},
			Usage: "store a block once `N` blocks sit on it (0 with --dev)"},
		&cli.StringFlag{Name: "backfill-blocks", Value: "1000", EnvVars: []string{"ADDRD_BACKFILL_BLOCKS"},
			Usage: "a new subscription gets the transactions of the last `N` blocks, or with \"all\" its whole history (needs an archive node; else the last 1000 blocks)"},
		&cli.BoolFlag{Name: "backfill-exhaustive", EnvVars: []string{"ADDRD_BACKFILL_EXHAUSTIVE"},
			Usage: "with --backfill-blocks all, on a node without trace_filter, also read every block for contracts and addresses that never sent (a payment passing through a contract, a contract created and destroyed in one transaction): about as many calls as a block scan"},
		&cli.DurationFlag{Name: "fetch-interval", Value: 2 * time.Second, EnvVars: []string{"ADDRD_FETCH_INTERVAL"},
			Usage: "once caught up, the fetcher asks the node for a new block every `DURATION` (500ms with --dev): what a new block waits for at most before its rows are stored and its events sent"},
		&cli.DurationFlag{Name: "refresh-interval", Value: 10 * time.Minute, EnvVars: []string{"ADDRD_REFRESH_INTERVAL"},
			Usage: "every tracked address's balances are read again at least every `DURATION`, whatever the block cadence"},
		&cli.StringFlag{Name: "traces", Value: fetch.InternalsAuto, EnvVars: []string{"ADDRD_TRACES"},
			Usage: "internal transfers from the node's trace API (debug_traceBlockByNumber callTracer, or trace_block), `MODE`: auto (when the node has one), on (required) or off"},
		&cli.DurationFlag{Name: "lease-ttl", Value: fetch.DefaultLeaseTTL, EnvVars: []string{"ADDRD_LEASE_TTL"},
			Usage: "how long (`DURATION`) a replica's lease on a chain's fetching lasts unless renewed: a frozen or cut-off leader loses it within this, and another replica takes over"},
		&cli.Uint64Flag{Name: "max-reorg-depth", Value: fetch.DefaultMaxReorgDepth, EnvVars: []string{"ADDRD_MAX_REORG_DEPTH"},
			Usage: "the deepest reorg applied, in `BLOCKS`: a deeper one, or one below the node's finalized block, stops the chain's fetching, deleting nothing, until addrd chain resume or addrd chain rewind"},
		&cli.BoolFlag{Name: "dev", EnvVars: []string{"ADDRD_DEV"},
			Usage: "run an in-process Ethereum dev chain as ETH, with demo accounts and a ready API key (a fresh temporary database unless --db is given)"},
	}
}

// fetchOptions are the fetch flags as read.
type fetchOptions struct {
	fetch          bool
	confirmations  uint64
	backfillBlocks uint64
	backfillAll    bool
	exhaustive     bool // read every block for what no state shows
	refresh        time.Duration
	interval       time.Duration
	traces         string
	leaseTTL       time.Duration
	maxReorgDepth  uint64
	holder         string // this replica in the leases: host:pid
}

func fetchOptionsFrom(c *cli.Context) (fetchOptions, error) {
	o := fetchOptions{
		fetch:         c.Bool("fetch"),
		confirmations: c.Uint64("confirmations"),
		exhaustive:    c.Bool("backfill-exhaustive"),
		refresh:       c.Duration("refresh-interval"),
		interval:      c.Duration("fetch-interval"),
		traces:        c.String("traces"),
		leaseTTL:      c.Duration("lease-ttl"),
		maxReorgDepth: c.Uint64("max-reorg-depth"),
		holder:        holderName(),
	}
	switch v := c.String("backfill-blocks"); v {
	case "all":
		o.backfillAll, o.backfillBlocks = true, 1000
	default:
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 {
			return o, shell.Usagef("--backfill-blocks %q: want a number of blocks, such as 1000, or all", v)
		}
		o.backfillBlocks = n
	}
	if o.maxReorgDepth == 0 {
		return o, shell.Usagef("--max-reorg-depth 0: want at least 1 block")
	}
	if o.refresh < time.Second {
		return o, shell.Usagef("--refresh-interval %s: want at least 1s", o.refresh)
	}
	if c.Bool("dev") {
		if !c.IsSet("confirmations") {
			o.confirmations = 0
		}
		if !c.IsSet("fetch-interval") {
			o.interval = 500 * time.Millisecond
		}
	}
	if o.interval < 100*time.Millisecond {
		return o, shell.Usagef("--fetch-interval %s: want at least 100ms", o.interval)
	}
	return o, nil
}

// chainFetcher is a started fetcher and its chain.
type chainFetcher struct {
	chain string
	f     *fetch.Fetcher
}

// startFetchers starts one fetcher per chain in wg, stopped when ctx ends.
func startFetchers(ctx context.Context, wg *sync.WaitGroup, log *slog.Logger, db *store.DB, reg prometheus.Registerer, chains []chain, o fetchOptions) ([]chainFetcher, error) {
	var out []chainFetcher
	for _, c := range chains {
		d, err := dialChain(ctx, c)
		if err != nil {
			return nil, err
		}
		if r, ok := d.reader.(interface{ ExhaustHistory(bool) }); ok { // an EVM chain's
			r.ExhaustHistory(o.exhaustive)
		}
		f, err := fetch.New(fetch.Config{
			Chain:           c.Name,
			Native:          c.Native,
			Store:           db,
			Reader:          d.reader,
			Logger:          log,
			Metrics:         reg,
			Confirmations:   o.confirmations,
			BackfillBlocks:  o.backfillBlocks,
			BackfillAll:     o.backfillAll,
			RefreshInterval: o.refresh,
			Interval:        o.interval,
			Internals:       o.traces,
			Holder:          o.holder,
			LeaseTTL:        o.leaseTTL,
			MaxReorgDepth:   o.maxReorgDepth,
		})
		if err != nil {
			d.close()
			return nil, err
		}
		// A node of another network than the database holds stops the
		// start; a node that does not answer yet is the fetcher's to retry.
		checkCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = f.CheckChain(checkCtx)
		cancel()
		if err != nil && !errors.Is(err, query.ErrUnavailable) {
			d.close()
			return nil, err
		}
		// The trace API is found at start and said in the log; a node
		// without one under --traces on stops the start.
		probeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = f.Probe(probeCtx)
		cancel()
		if err != nil && !errors.Is(err, query.ErrUnavailable) {
			d.close()
			return nil, err
		}
		log.Info("chain", "name", c.Name, "utxo", c.Family == query.FamilyUTXO, "rpc", redactURL(c.RPC), "fetcher", "started",
			"confirmations", o.confirmations, "backfill_blocks", o.backfillBlocks, "backfill_all", o.backfillAll)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer d.close()
			f.Run(ctx)
		}()
		out = append(out, chainFetcher{chain: c.Name, f: f})
	}
	return out, nil
}

// holderName names this replica in the chains' leases: host:pid.
func holderName() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}
