package fetch_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/evm/devchain"
	"github.com/wharfhq/wharf/query/evm/devchain/devchaintest"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
)

// The fetcher harness: every test of the fetcher on the dev chain starts
// from newEnv (or newEnvOn), and every fetcher of a test is made by
// env.fetcher.

func TestMain(m *testing.M) { testenv.Main(m) }

const chain = "ETH"

// env is a dev chain over HTTP JSON-RPC, its Source behind a fault source
// (hooks that replace answers), a real store with alice's API key, and a
// fetcher over them.
type env struct {
	t       *testing.T
	dev     *devchain.Chain
	src     *evm.Source  // the dev chain's Source
	fault   *faultSource // src with hooks: the fetcher's Source unless a test gives another
	dsn     string
	db      *store.DB
	account int64
	cfg     fetch.Config
	f       *fetch.Fetcher
	reg     *prometheus.Registry // the metrics of f
	log     *testenv.Buffer      // the log of f
}

// newEnv is newEnvOn a default dev chain.
func newEnv(t *testing.T, dsn string, cfg fetch.Config) *env {
	t.Helper()
	return newEnvOn(t, devchain.Config{}, dsn, cfg)
}

// newEnvOn starts a dev chain of chainCfg, dials it, opens the store at
// dsn with an API key for alice, and makes a fetcher of cfg over them,
// all closed at the test's end.
func newEnvOn(t *testing.T, chainCfg devchain.Config, dsn string, cfg fetch.Config) *env {
	t.Helper()
	ctx := context.Background()
	dev := devchaintest.Start(t, chainCfg)
	src := devchaintest.Dial(t, dev)
	e := &env{t: t, dev: dev, src: src, fault: &faultSource{Source: src}, dsn: dsn, cfg: cfg}
	e.open()
	key, _, err := e.db.CreateAPIKey(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	e.account = key.AccountID
	e.newFetcher(e.db)
	return e
}

// open opens the store (again, as a restarted process would).
func (e *env) open() {
	e.t.Helper()
	db, err := store.Open(context.Background(), e.dsn)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { db.Close() })
	e.db = db
}

// fetcher returns a new fetcher of the chain over st and src with cfg;
// its metrics go to a new e.reg, its log to a new e.log.
func (e *env) fetcher(st fetch.Store, src query.Source, cfg fetch.Config) *fetch.Fetcher {
	e.t.Helper()
	e.log = &testenv.Buffer{}
	e.reg = prometheus.NewRegistry()
	cfg.Chain, cfg.Store, cfg.Reader = chain, st, evm.NewReader(src)
	cfg.Logger = slog.New(slog.NewTextHandler(e.log, nil))
	cfg.Metrics = e.reg
	f, err := fetch.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return f
}

// start runs the fetcher until the function it returns, which stops it
// and waits for Run to return.
func (e *env) start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.f.Run(ctx) }()
	return func() { cancel(); <-done }
}

// newFetcher replaces the fetcher with a new one over st, as after a restart.
func (e *env) newFetcher(st fetch.Store) {
	e.t.Helper()
	e.f = e.fetcher(st, e.fault, e.cfg)
}

// useSource replaces the fetcher with one over src, with traces, and
// returns its log.
func (e *env) useSource(src query.Source, traces string) *testenv.Buffer {
	e.t.Helper()
	cfg := e.cfg
	cfg.Internals = traces
	e.f = e.fetcher(e.db, src, cfg)
	return e.log
}

// waitStored waits until the fetcher, running beside the test, has stored
// the blocks up to head; it fails the test at deadline, saying what the
// head follower was beside.
func (e *env) waitStored(head uint64, deadline <-chan time.Time, beside string) {
	e.t.Helper()
	for {
		cp, _, err := e.db.Checkpoint(context.Background(), chain)
		if err != nil {
			e.t.Fatal(err)
		}
		if cp.Number >= head {
			return
		}
		select {
		case <-deadline:
			e.t.Fatalf("the head follower stalled at %d beside %s (head %d)", cp.Number, beside, head)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// forward passes a JSON-RPC request body to the node at target and its
// answer back: the end of the tests' JSON-RPC proxies.
func forward(w http.ResponseWriter, target string, body []byte) {
	resp, err := http.Post(target, "application/json", bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// faultSource is the dev chain's Source with hooks that replace the
// answers of the trace and balance calls.
type faultSource struct {
	*evm.Source
	mu       sync.Mutex
	traces   func(ctx context.Context, b query.SourceBlock, api string) ([]query.InternalMove, error)
	balances func(ctx context.Context, at uint64, qs []query.BalanceQuery) ([]query.Balance, error)
}

// addNative makes the node say address held delta more of the native
// coin at each of blocks than it did: a change no movement explains.
func (s *faultSource) addNative(address string, delta query.Amount, blocks ...uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.balances = func(ctx context.Context, at uint64, qs []query.BalanceQuery) ([]query.Balance, error) {
		bals, err := s.Source.Balances(ctx, at, qs)
		for i := range bals {
			if bals[i].Address == address && bals[i].Contract == "" && slices.Contains(blocks, at) {
				bals[i].Amount = bals[i].Amount.Add(delta)
			}
		}
		return bals, err
	}
}

func (s *faultSource) Traces(ctx context.Context, b query.SourceBlock, api string) ([]query.InternalMove, error) {
	s.mu.Lock()
	hook := s.traces
	s.mu.Unlock()
	if hook != nil {
		return hook(ctx, b, api)
	}
	return s.Source.Traces(ctx, b, api)
}

func (s *faultSource) Balances(ctx context.Context, at uint64, qs []query.BalanceQuery) ([]query.Balance, error) {
	s.mu.Lock()
	hook := s.balances
	s.mu.Unlock()
	if hook != nil {
		return hook(ctx, at, qs)
	}
	return s.Source.Balances(ctx, at, qs)
}

// noTraces is a Source of a node without any trace API: it is no query.Tracer.
type noTraces struct{ query.Source }

// unfinal is a Source of a node without a finalized tag (no
// query.Finalizer), with its trace API.
type unfinal struct {
	query.Source
	query.Tracer
}
