package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/buildinfo"
	"github.com/wharfhq/wharf/internal/clientip"
	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/api"
	seam "github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/events"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/webhook"
)

// dbFlag is the --db flag every command shares.
func dbFlag() cli.Flag {
	return &cli.StringFlag{Name: "db", Value: store.DefaultDSN, EnvVars: []string{"ADDRD_DB"},
		Usage: "the database: a SQLite `FILE` or a postgres:// URL"}
}

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the /v1 API for the chains given with --chain",
		Description: `Serves /v1 (see /v1/openapi.yaml), /healthz and /metrics on --listen.
The database (--db) is migrated at start. Every /v1 request needs an API
key (addrd apikey create). --chain declares a chain the API accepts and
the node it is fetched from; repeat it for several chains.
SIGINT or SIGTERM stop it gracefully.

Example:
   addrd serve --dev
   addrd serve --listen 127.0.0.1:8090 --db addrd.db --chain ETH=http://127.0.0.1:8545
   addrd serve --chain ETH=http://127.0.0.1:8545 --chain BTC=http://user:pass@127.0.0.1:8332
   ADDRD_DB=postgres://addrd@db/addrd?sslmode=disable ADDRD_CHAIN=ETH=http://node:8545 addrd serve`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8090", EnvVars: []string{"ADDRD_LISTEN"},
				Usage: "serve HTTP on `ADDR`"},
			dbFlag(),
			&cli.StringSliceFlag{Name: "chain", EnvVars: []string{"ADDRD_CHAIN"},
				Usage: "a chain and its node's JSON-RPC URL, `NAME=RPC_URL` (repeatable; comma-separated in ADDRD_CHAIN); BTC, LTC, BTCREGTEST, LTCREGTEST and the other names of the UTXO networks are Bitcoin's and Litecoin's, every other name an EVM chain, whose native coin comes from a table by the node's chain ID, or give it: NAME:SYMBOL:DECIMALS=RPC_URL"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: 15 * time.Second, EnvVars: []string{"ADDRD_SHUTDOWN_TIMEOUT"},
				Usage: "how long (`DURATION`) requests in flight may finish after SIGTERM"},
			&cli.StringSliceFlag{Name: "trusted-proxy", EnvVars: []string{"ADDRD_TRUSTED_PROXY"},
				Usage: "believe X-Forwarded-For from peers in `CIDR` (repeatable; comma-separated in ADDRD_TRUSTED_PROXY): the client address of the limits and logs"},
			&cli.StringFlag{Name: "rate-key", Value: "0", EnvVars: []string{"ADDRD_RATE_KEY"},
				Usage: "requests per API key, `RATE` = N/s, N/m or N/h, in bursts of up to N (0: no limit)"},
			&cli.IntFlag{Name: "max-requests-per-key", Value: api.DefaultMaxRequestsPerKey, EnvVars: []string{"ADDRD_MAX_REQUESTS_PER_KEY"},
				Usage: "requests, `N`, of one API key at once, from authentication until the answer is written (answers unread count); beyond it 429"},
			&cli.IntFlag{Name: "store-turns-per-key", EnvVars: []string{"ADDRD_STORE_TURNS_PER_KEY"},
				Usage: "database turns, `N`, one API key's requests hold at once; the keys waiting are served round-robin (0: half of the turns, which are the database's read connections)"},
			&cli.DurationFlag{Name: "body-timeout", Value: api.DefaultBodyTimeout, EnvVars: []string{"ADDRD_BODY_TIMEOUT"},
				Usage: "a request body not received within `DURATION` is answered 408 (bodies are read before a database turn is taken)"},
			&cli.IntFlag{Name: "max-subscriptions", Value: 10_000, EnvVars: []string{"ADDRD_MAX_SUBSCRIPTIONS"},
				Usage: "the most subscriptions, `N`, a requester (an account) may hold (0: no limit)"},
		}, append(shell.LogFlags("ADDRD"), append(fetchFlags(), eventFlags()...)...)...),
		Action: serve,
	}
}

// chain is a --chain NAME[:SYMBOL[:DECIMALS]]=RPC_URL.
type chain struct {
	Name string
	RPC  string
	// Native is the native coin given on the flag, or a UTXO network's;
	// zero: from the table of well-known networks by the node's chain ID.
	Native query.NativeCoin
	// Family is query.FamilyUTXO for a name of the table's UTXO rows
	// (Network is then its row); "" for an EVM chain.
	Family  string
	Network query.Network
}

var (
	chainName  = regexp.MustCompile(`^[A-Z][A-Z0-9]{0,15}$`)
	coinSymbol = regexp.MustCompile(`^[A-Za-z0-9.]{1,16}$`)
)

// parseChains reads the --chain values: NAME=RPC_URL, or with the native
// coin of a network the built-in table does not know (or to override it)
// NAME:SYMBOL=RPC_URL (18 decimals) or NAME:SYMBOL:DECIMALS=RPC_URL.
func parseChains(values []string) ([]chain, error) {
	var out []chain
	seen := make(map[string]bool)
	for _, v := range values {
		spec, rpc, ok := strings.Cut(v, "=")
		name, coin, withCoin := strings.Cut(spec, ":")
		if !ok || !chainName.MatchString(name) {
			// Only the name part: what follows = is a URL that may hold a key.
			return nil, shell.Usagef("--chain %s: want NAME=RPC_URL with NAME in capitals, such as ETH=http://127.0.0.1:8545 (or NAME:SYMBOL:DECIMALS=RPC_URL)", shown(spec))
		}
		c := chain{Name: name, RPC: rpc}
		if n, ok := query.NetworkNamed(name); ok {
			if withCoin {
				return nil, shell.Usagef("--chain %s: %s is %s, whose coin is %s: give %s=RPC_URL", name, name, n.Name, n.Native.Symbol, name)
			}
			c.Family, c.Network, c.Native = query.FamilyUTXO, n, n.Native
		}
		if withCoin {
			sym, dec, withDec := strings.Cut(coin, ":")
			if !coinSymbol.MatchString(sym) {
				return nil, shell.Usagef("--chain %s: native coin symbol %s: want 1 to 16 letters or digits, such as %s:POL=RPC_URL", name, shown(sym), name)
			}
			c.Native = query.NativeCoin{Symbol: sym, Decimals: 18}
			if withDec {
				d, err := strconv.ParseUint(dec, 10, 8)
				if err != nil || d > 77 {
					return nil, shell.Usagef("--chain %s: native coin decimals %s: want an integer from 0 to 77", name, shown(dec))
				}
				c.Native.Decimals = int(d)
			}
		}
		u, err := url.Parse(rpc)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return nil, shell.Usagef("--chain %s: %q is not an http(s) or ws(s) URL", name, redactURL(rpc))
		}
		if c.Family == query.FamilyUTXO && u.Scheme != "http" && u.Scheme != "https" {
			return nil, shell.Usagef("--chain %s: %q: a %s node is read over http(s), such as http://USER:PASS@127.0.0.1:8332", name, redactURL(rpc), c.Network.Name)
		}
		if seen[name] {
			return nil, shell.Usagef("--chain %s given twice", name)
		}
		seen[name] = true
		out = append(out, c)
	}
	return out, nil
}

// shown quotes a part of a mistyped --chain value for its error, unless it
// may hold a node URL's secret (a path, userinfo, query or fragment, as in
// "--chain https://node/v3/KEY" with the NAME= left out).
func shown(s string) string {
	if strings.ContainsAny(s, "/@?#") {
		return "(not shown: it may hold a URL)"
	}
	return strconv.Quote(s)
}

// server is what serve runs: the API's HTTP server over one database,
// and the background workers beside it.
type server struct {
	log     *slog.Logger
	db      *store.DB
	chains  []chain
	http    *http.Server
	reg     *prometheus.Registry
	fetch   fetchOptions
	health  *health // the chains' state for /healthz and the chain metrics
	events  eventOptions
	deliver *webhook.Deliverer // runs with --webhooks
	wallets *walletKeeper      // nil when no chain derives addresses
}

// serverOptions are serve's flags for the API server.
type serverOptions struct {
	listen           string
	clientIP         *clientip.Resolver
	keyRate          api.Limit
	maxSubscriptions int
	maxRequests      int           // of one API key at once
	turnsPerKey      int           // store turns of one API key at once
	bodyTimeout      time.Duration // to read a request body
	events           eventOptions
	holder           string        // this replica in the leases
	leaseTTL         time.Duration // of a lease not renewed
}

// serverOptionsFrom reads the server flags.
func serverOptionsFrom(c *cli.Context) (serverOptions, error) {
	o := serverOptions{listen: c.String("listen"), maxSubscriptions: c.Int("max-subscriptions"),
		holder: holderName(), leaseTTL: c.Duration("lease-ttl"), maxRequests: c.Int("max-requests-per-key"),
		turnsPerKey: c.Int("store-turns-per-key"), bodyTimeout: c.Duration("body-timeout")}
	switch {
	case o.maxRequests < 1:
		return o, shell.Usagef("--max-requests-per-key %d: want 1 or more", o.maxRequests)
	case o.turnsPerKey < 0:
		return o, shell.Usagef("--store-turns-per-key %d: want 0 (half of the turns) or more", o.turnsPerKey)
	case o.bodyTimeout < 100*time.Millisecond || o.bodyTimeout > 10*time.Minute:
		return o, shell.Usagef("--body-timeout %s: want from 100ms to 10m", o.bodyTimeout)
	}
	var err error
	if o.events, err = eventOptionsFrom(c); err != nil {
		return o, err
	}
	if o.clientIP, err = clientip.Parse(c.StringSlice("trusted-proxy")); err != nil {
		return o, shell.Usagef("--trusted-proxy: %w", err)
	}
	rate, err := shell.ParseRate(c.String("rate-key"))
	if err != nil {
		return o, shell.Usagef("--rate-key %q: %w", c.String("rate-key"), err)
	}
	o.keyRate = api.Limit{Rate: rate.PerSecond, Burst: rate.Burst}
	if o.maxSubscriptions < 0 {
		return o, shell.Usagef("--max-subscriptions %d: want 0 (no limit) or more", o.maxSubscriptions)
	}
	return o, nil
}

// newServer opens the database and builds the API server.
func newServer(ctx context.Context, log *slog.Logger, dsn string, o serverOptions, chains []chain) (*server, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildinfo.Read().Collector("addrd"))
	db, err := openWaiting(ctx, log, func() (*store.DB, error) {
		return store.Open(ctx, dsn, store.WithMaxSubscriptions(o.maxSubscriptions), store.WithMaxWebhooks(o.events.maxEndpoints),
			store.WithQuarantine(quarantineLog(log, reg)), store.WithLegacyDetail(evm.LegacyDetail))
	})
	if err != nil {
		return nil, err
	}
	names := make([]string, len(chains))
	syntax := make(map[string]seam.Syntax, len(chains))
	for i, c := range chains {
		names[i] = c.Name
		if syntax[c.Name], err = syntaxOf(c); err != nil {
			db.Close()
			return nil, err
		}
	}
	health := newHealth(db, chains)
	watch := events.NewWatcher(db.LastEventID, 100*time.Millisecond)
	db.OnEvents(watch.Notify)
	deliver := webhook.New(webhook.Config{Store: db, Policy: o.events.policy, Holder: o.holder, Workers: o.events.workers,
		WorkersPerRequester: o.events.workersPerRequester, Timeout: o.events.timeout, RetryFor: o.events.retryFor, LeaseTTL: o.leaseTTL, Rate: o.events.rate.PerSecond,
		Burst: o.events.rate.Burst, Watcher: watch, Logger: log, Metrics: reg, TestAddress: evm.ZeroAddress})
	h := api.New(api.Config{Store: db, Chains: names, Syntax: syntax, Logger: log, Metrics: reg, MaxInFlight: db.Readers(),
		ClientIP: o.clientIP, KeyRate: o.keyRate, Health: health, Watcher: watch, Webhooks: deliver,
		MaxRequestsPerKey: o.maxRequests, TurnsPerKey: o.turnsPerKey, BodyTimeout: o.bodyTimeout})
	// The secrets are written now, while the database takes writes: a
	// full disk later must not fail the reads that need them.
	if err := h.LoadSecrets(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return &server{
		log:     log,
		db:      db,
		chains:  chains,
		reg:     reg,
		health:  health,
		events:  o.events,
		deliver: deliver,
		wallets: newWalletKeeper(db, log, syntax),
		http: &http.Server{
			Addr:              o.listen,
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      30 * time.Second,
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    64 << 10,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
	}, nil
}

// startWorkers starts the background workers, each in wg, stopped when
// ctx ends: one fetcher per chain unless --fetch=false. /healthz and the
// chain metrics report the chains' leadership and lag in either case.
func (s *server) startWorkers(ctx context.Context, wg *sync.WaitGroup) error {
	var fetchers []chainFetcher
	if s.fetch.fetch {
		var err error
		if fetchers, err = startFetchers(ctx, wg, s.log, s.db, s.reg, s.chains, s.fetch); err != nil {
			return err
		}
	} else {
		for _, c := range s.chains {
			s.log.Info("chain", "name", c.Name, "rpc", redactURL(c.RPC), "fetcher", "off (--fetch=false)")
		}
	}
	startPruner(ctx, wg, s.log, s.db, s.events, time.Now)
	if s.fetch.fetch {
		s.wallets.start(ctx, wg, s.fetch.interval)
	}
	if s.events.deliver {
		wg.Go(func() { s.deliver.Run(ctx) })
	}
	// Set before the server starts: the API reads them while serving.
	s.health.fetchers, s.health.self, s.health.ttl = fetchers, s.fetch.holder, s.fetch.leaseTTL
	if err := s.reg.Register(s.health); err != nil {
		return fmt.Errorf("chain metrics: %w", err)
	}
	return nil
}

// redactURL hides a node URL's userinfo, path and query, where
// providers put their keys, for logs and errors.
func redactURL(s string) string { return evm.RedactURL(s) }

func serve(c *cli.Context) error {
	if c.NArg() > 0 {
		return shell.Usagef("serve: unexpected argument %q", c.Args().First())
	}
	log, closeLog, err := shell.NewLogger(c.App.ErrWriter, c.String("log-level"), c.String("log-format"))
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer closeLog()
	chains, err := parseChains(c.StringSlice("chain"))
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if len(chains) == 0 && !c.Bool("dev") {
		return shell.Usagef("serve: give at least one --chain NAME=RPC_URL, such as --chain ETH=http://127.0.0.1:8545, or --dev")
	}
	opts, err := serverOptionsFrom(c)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	ctx, stop := shell.SignalContext(c.Context)
	defer stop()

	// The port first: a taken one is the error, reported before the dev
	// chain or the database starts.
	ln, err := shell.Listen(c, "listen")
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer ln.Close()
	dev, chains, dsn, err := startDevChain(ctx, c, log, chains)
	if err != nil {
		return startErr(ctx, log, err)
	}
	defer dev.close()
	s, err := newServer(ctx, log, dsn, opts, chains)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer s.db.Close()
	if s.fetch, err = fetchOptionsFrom(c); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if dev != nil {
		if err := dev.announce(ctx, c.App.Writer, s.db); err != nil {
			return startErr(ctx, log, err)
		}
	}

	var workers sync.WaitGroup
	workCtx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	if err := s.startWorkers(workCtx, &workers); err != nil {
		return fmt.Errorf("serve: %w", err)
	}

	log.Info("addrd serving", "addr", ln.Addr().String(), "db", store.Redact(dsn))
	fmt.Fprintf(c.App.Writer, "addrd listening on http://%s\n", ln.Addr())
	err = shell.Serve(ctx, s.http, ln, c.Duration("shutdown-timeout"))
	stopWorkers()
	workers.Wait()
	if err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// startErr is the error of serve when starting failed with err: none when
// a signal stopped it (the dev chain's or the database's "context
// canceled" is only the signal's echo), else err.
func startErr(ctx context.Context, log *slog.Logger, err error) error {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		log.Info("stopped before serving")
		return nil
	}
	return fmt.Errorf("serve: %w", err)
}
