package testenv

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Geth is a real `geth --dev` node on loopback (go-ethereum v1.17.8,
// `make geth`): a fresh proof-of-stake dev chain that mines a block for
// each transaction it receives (--dev.period 0), with the eth, net, web3,
// debug (tracers) and dev (dev_addWithdrawal, dev_setFeeRecipient) APIs
// over HTTP. Its dev account (Account) holds the chain's ether and signs
// through eth_sendTransaction.
type Geth struct {
	// URL is the HTTP JSON-RPC endpoint, http://127.0.0.1:PORT.
	URL string
	// Account is the dev account, lowercase 0x-hex.
	Account string
	// Dir is the node's data directory (its log is Dir/geth.log).
	Dir string

	bin      string
	port     int
	authPort int
	archive  bool
	mu       sync.Mutex
	proc     *Process
}

// GethBinary finds the pinned geth: $WHARF_GETH, ./bin/geth at the module
// root, $(go env GOPATH)/bin/geth, or PATH.
func GethBinary() (string, error) {
	return goTool("geth", "WHARF_GETH", "make geth builds the pinned one")
}

// NewGeth starts a geth --dev node of the test's own, on a fresh chain,
// and stops it (and removes its data) at cleanup. It skips or fails as
// Need when geth is not built. When the test fails, the end of the node's
// log is in the test's output.
func NewGeth(tb testing.TB) *Geth {
	tb.Helper()
	return newGeth(tb, false)
}

// NewArchiveGeth is NewGeth of an archive node (--gcmode archive, hash
// state scheme): it keeps the state of every block, where a plain dev
// node keeps that of the last 128 only, so that blocks far behind its
// head can be traced (debug_traceBlockByNumber needs the parent's state).
func NewArchiveGeth(tb testing.TB) *Geth {
	tb.Helper()
	return newGeth(tb, true)
}

func newGeth(tb testing.TB, archive bool) *Geth {
	tb.Helper()
	bin, err := GethBinary()
	Need(tb, "geth", err)
	dir, err := os.MkdirTemp("", "wharf-geth-")
	if err != nil {
		tb.Fatal(err)
	}
	g := &Geth{Dir: dir, bin: bin, archive: archive}
	// A port found free may be taken before geth binds it: try again with
	// new ports when the node exits at start.
	for attempt := 0; ; attempt++ {
		g.port, g.authPort = FreePort(tb), FreePort(tb)
		g.URL = "http://127.0.0.1:" + strconv.Itoa(g.port)
		if err = g.Start(); err == nil || attempt == 2 {
			break
		}
	}
	tb.Cleanup(func() {
		g.Kill()
		if tb.Failed() {
			tb.Logf("geth log (end):\n%s", g.logTail(4000))
		}
		os.RemoveAll(dir)
	})
	if err != nil {
		tb.Fatalf("geth: %v", err)
	}
	var accounts []string
	if err := g.Call(context.Background(), &accounts, "eth_accounts"); err != nil || len(accounts) == 0 {
		tb.Fatalf("geth: eth_accounts = %v, %v", accounts, err)
	}
	g.Account = strings.ToLower(accounts[0])
	return g
}

// Start starts the node (again, after Kill) on the same ports and data
// directory, and waits until it answers JSON-RPC.
func (g *Geth) Start() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	args := []string{"--dev", "--dev.period", "0",
		"--http", "--http.addr", "127.0.0.1", "--http.port", strconv.Itoa(g.port),
		"--http.api", "eth,net,web3,debug,dev",
		"--ipcdisable", "--port", "0", "--authrpc.port", strconv.Itoa(g.authPort),
		"--datadir", g.Dir, "--verbosity", "2"}
	if g.archive {
		// The hash scheme, which keeps every block's state on disk in
		// archive mode (a dev node's default path scheme keeps recent
		// states: "historical state is not available").
		args = append(args, "--gcmode", "archive", "--state.scheme", "hash")
	}
	p, err := StartProcess(filepath.Join(g.Dir, "geth.log"), 50*time.Millisecond, func(ctx context.Context) error {
		var head string
		return g.Call(ctx, &head, "eth_blockNumber")
	}, g.bin, args...)
	if err != nil {
		return fmt.Errorf("geth at %s: %w", g.URL, err)
	}
	g.proc = p
	return nil
}

// Stop stops the node gracefully (SIGTERM), so that it writes its chain
// to disk, and waits for it to exit (killing it after 30 s).
func (g *Geth) Stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.proc != nil {
		g.proc.Stop(30 * time.Second)
		g.proc = nil
	}
}

// Kill stops the node at once (SIGKILL), as a crash would. A dev node
// keeps its recent blocks in memory: after Kill and Start it may be back
// at an older head (a reorg, for whoever followed it).
func (g *Geth) Kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.proc != nil {
		g.proc.Kill()
		g.proc = nil
	}
}

func (g *Geth) logTail(n int) string {
	return (&Process{Log: filepath.Join(g.Dir, "geth.log")}).LogTail(n)
}

// Send sends a transaction from the dev account's node
// (eth_sendTransaction: tx holds from, to, value, data, gas... as the
// JSON-RPC spells them) and waits, polling with a deadline of ctx or 60 s,
// until it is mined; it returns the receipt.
func (g *Geth) Send(ctx context.Context, tx map[string]any) (map[string]any, error) {
	var hash string
	if err := g.Call(ctx, &hash, "eth_sendTransaction", tx); err != nil {
		return nil, err
	}
	return g.Receipt(ctx, hash)
}

// Transact sends a transaction from the node's account to to ("" creates
// a contract from data) with value (nil: none), data (nil: none) and gas,
// waits until it is mined and returns its receipt; it fails tb on error.
func (g *Geth) Transact(tb testing.TB, to string, value *big.Int, data []byte, gas uint64) map[string]any {
	tb.Helper()
	tx := map[string]any{"from": g.Account, "gas": "0x" + strconv.FormatUint(gas, 16)}
	if to != "" {
		tx["to"] = to
	}
	if value != nil {
		tx["value"] = "0x" + value.Text(16)
	}
	if data != nil {
		tx["data"] = "0x" + hex.EncodeToString(data)
	}
	r, err := g.Send(context.Background(), tx)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// Receipt waits, polling with a deadline of ctx or 60 s, for the receipt
// of the transaction hash and returns it.
func (g *Geth) Receipt(ctx context.Context, hash string) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		var receipt map[string]any
		// A fresh node answers "transaction indexing is in progress" for a
		// while: not an error, wait.
		if err := g.Call(ctx, &receipt, "eth_getTransactionReceipt", hash); err != nil && !strings.Contains(err.Error(), "indexing is in progress") {
			return nil, err
		}
		if receipt != nil {
			return receipt, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("receipt of %s: %w", hash, ctx.Err())
		case <-tick.C:
		}
	}
}

// Call makes one JSON-RPC call and decodes its result into result (nil:
// ignore it). A JSON-RPC error is returned as an error naming the method.
func (g *Geth) Call(ctx context.Context, result any, method string, params ...any) error {
	return RPCClient{URL: g.URL}.Call(ctx, result, method, params...)
}
