package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/buildinfo"
	"github.com/wharfhq/wharf/internal/clientip"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/eth"
	"github.com/wharfhq/wharf/query/store"
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
   ADDRD_DB=postgres://addrd@db/addrd?sslmode=disable ADDRD_CHAIN=ETH=http://node:8545 addrd serve`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8090", EnvVars: []string{"ADDRD_LISTEN"},
				Usage: "serve HTTP on `ADDR`"},
			dbFlag(),
			&cli.StringSliceFlag{Name: "chain", EnvVars: []string{"ADDRD_CHAIN"},
				Usage: "a chain and its node's JSON-RPC URL, `NAME=RPC_URL` (repeatable; comma-separated in ADDRD_CHAIN); the native coin comes from a table by the node's chain ID, or give it: NAME:SYMBOL:DECIMALS=RPC_URL"},
			&cli.StringFlag{Name: "log-level", Value: "info", EnvVars: []string{"ADDRD_LOG_LEVEL"},
				Usage: "log `LEVEL`: debug (every request), info, warn, error"},
			&cli.StringFlag{Name: "log-format", Value: "text", EnvVars: []string{"ADDRD_LOG_FORMAT"},
				Usage: "log `FORMAT`: text or json"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: 15 * time.Second, EnvVars: []string{"ADDRD_SHUTDOWN_TIMEOUT"},
				Usage: "how long in-flight requests may finish at shutdown"},
			&cli.StringSliceFlag{Name: "trusted-proxy", EnvVars: []string{"ADDRD_TRUSTED_PROXY"},
				Usage: "believe X-Forwarded-For from peers in `CIDR` (repeatable; comma-separated in ADDRD_TRUSTED_PROXY): the client address of the limits and logs"},
			&cli.StringFlag{Name: "rate-key", Value: "0", EnvVars: []string{"ADDRD_RATE_KEY"},
				Usage: "requests per API key, `RATE` = N/s, N/m or N/h, in bursts of up to N (0: no limit)"},
			&cli.IntFlag{Name: "max-subscriptions", Value: 10_000, EnvVars: []string{"ADDRD_MAX_SUBSCRIPTIONS"},
				Usage: "the most subscriptions a requester (an account) may hold (0: no limit)"},
		}, fetchFlags()...),
		Action: serve,
	}
}

// chain is a --chain NAME[:SYMBOL[:DECIMALS]]=RPC_URL.
type chain struct {
	Name string
	RPC  string
	// Native is the native coin given on the flag; zero: from the table
	// of well-known networks by the node's chain ID.
	Native query.NativeCoin
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
			return nil, fmt.Errorf("--chain %s: want NAME=RPC_URL with NAME in capitals, such as ETH=http://127.0.0.1:8545 (or NAME:SYMBOL:DECIMALS=RPC_URL)", shown(spec))
		}
		c := chain{Name: name, RPC: rpc}
		if withCoin {
			sym, dec, withDec := strings.Cut(coin, ":")
			if !coinSymbol.MatchString(sym) {
				return nil, fmt.Errorf("--chain %s: native coin symbol %s: want 1 to 16 letters or digits, such as %s:POL=RPC_URL", name, shown(sym), name)
			}
			c.Native = query.NativeCoin{Symbol: sym, Decimals: 18}
			if withDec {
				d, err := strconv.ParseUint(dec, 10, 8)
				if err != nil || d > 77 {
					return nil, fmt.Errorf("--chain %s: native coin decimals %s: want an integer from 0 to 77", name, shown(dec))
				}
				c.Native.Decimals = int(d)
			}
		}
		u, err := url.Parse(rpc)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return nil, fmt.Errorf("--chain %s: %q is not an http(s) or ws(s) URL", name, redactURL(rpc))
		}
		if seen[name] {
			return nil, fmt.Errorf("--chain %s given twice", name)
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

// parseRate reads --rate-key: N/s, N/m or N/h (N events per unit, in
// bursts of up to N), or 0 for no limit.
func parseRate(s string) (api.Limit, error) {
	if s == "0" || s == "" {
		return api.Limit{}, nil
	}
	n, unit, ok := strings.Cut(s, "/")
	per := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[unit]
	count, err := strconv.Atoi(n)
	if !ok || per == 0 || err != nil || count < 1 {
		return api.Limit{}, fmt.Errorf("--rate-key %q: want N/s, N/m or N/h with N at least 1, such as 100/s, or 0", s)
	}
	return api.Limit{Rate: float64(count) / per.Seconds(), Burst: count}, nil
}

// newLogger builds the process logger.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// server is what serve runs: the API's HTTP server over one database,
// and the background workers beside it.
type server struct {
	log    *slog.Logger
	db     *store.DB
	chains []chain
	http   *http.Server
	reg    *prometheus.Registry
	fetch  fetchOptions
}

// serverOptions are serve's flags for the API server.
type serverOptions struct {
	listen           string
	clientIP         *clientip.Resolver
	keyRate          api.Limit
	maxSubscriptions int
}

// serverOptionsFrom reads the server flags.
func serverOptionsFrom(c *cli.Context) (serverOptions, error) {
	o := serverOptions{listen: c.String("listen"), maxSubscriptions: c.Int("max-subscriptions")}
	var err error
	if o.clientIP, err = clientip.Parse(c.StringSlice("trusted-proxy")); err != nil {
		return o, fmt.Errorf("--trusted-proxy: %w", err)
	}
	if o.keyRate, err = parseRate(c.String("rate-key")); err != nil {
		return o, err
	}
	if o.maxSubscriptions < 0 {
		return o, fmt.Errorf("--max-subscriptions %d: want 0 (no limit) or more", o.maxSubscriptions)
	}
	return o, nil
}

// newServer opens the database and builds the API server.
func newServer(ctx context.Context, log *slog.Logger, dsn string, o serverOptions, chains []chain) (*server, error) {
	db, err := store.Open(ctx, dsn, store.WithMaxSubscriptions(o.maxSubscriptions))
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildinfo.Read().Collector("addrd"))
	names := make([]string, len(chains))
	for i, c := range chains {
		names[i] = c.Name
	}
	h := api.New(api.Config{Store: db, Chains: names, Logger: log, Metrics: reg, MaxInFlight: db.Readers(),
		ClientIP: o.clientIP, KeyRate: o.keyRate})
	return &server{
		log:    log,
		db:     db,
		chains: chains,
		reg:    reg,
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
	h := newHealth(s.http.Handler, s.db, s.chains, fetchers, s.fetch.holder, s.fetch.leaseTTL)
	if err := s.reg.Register(h); err != nil {
		return fmt.Errorf("chain metrics: %w", err)
	}
	s.http.Handler = h
	return nil
}

// redactURL hides a node URL's userinfo, path and query, where
// providers put their keys, for logs and errors.
func redactURL(s string) string { return eth.RedactURL(s) }

func serve(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("serve: unexpected argument %q", c.Args().First())
	}
	log, err := newLogger(c.App.ErrWriter, c.String("log-level"), c.String("log-format"))
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	chains, err := parseChains(c.StringSlice("chain"))
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if len(chains) == 0 && !c.Bool("dev") {
		return errors.New("serve: give at least one --chain NAME=RPC_URL, such as --chain ETH=http://127.0.0.1:8545, or --dev")
	}
	opts, err := serverOptionsFrom(c)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()

	dev, chains, dsn, err := startDevChain(ctx, c, log, chains)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
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
			return fmt.Errorf("serve: %w", err)
		}
	}
	ln, err := net.Listen("tcp", s.http.Addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}

	var workers sync.WaitGroup
	workCtx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	if err := s.startWorkers(workCtx, &workers); err != nil {
		return fmt.Errorf("serve: %w", err)
	}

	served := make(chan error, 1)
	go func() { served <- s.http.Serve(ln) }()
	log.Info("addrd serving", "addr", ln.Addr().String(), "db", store.Redact(dsn))
	fmt.Fprintf(c.App.Writer, "addrd listening on http://%s\n", ln.Addr())

	select {
	case err := <-served:
		stopWorkers()
		workers.Wait()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.Duration("shutdown-timeout"))
	defer cancel()
	err = s.http.Shutdown(shutdownCtx)
	stopWorkers()
	workers.Wait()
	if err != nil {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}
