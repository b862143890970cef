package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BitcoinNode is a real UTXO node on loopback in regtest, answering
// Bitcoin's JSON-RPC with HTTP basic auth: btcd (NewBtcd, btcd's dialect)
// or litecoind (NewLitecoind, Bitcoin Core's dialect).
type BitcoinNode struct {
	// URL is the JSON-RPC endpoint with its credentials,
	// http://USER:PASS@127.0.0.1:PORT.
	URL string
	// Dir is the node's data directory; its log is Dir/node.log.
	Dir string
	// Dialect is DialectBtcd or DialectCore.
	Dialect string

	host       string // 127.0.0.1:PORT
	user, pass string
	bin        string
	args       func(port int) []string
	port       int
	id         atomic.Int64
	client     http.Client
	mu         sync.Mutex
	cmd        *exec.Cmd
	done       chan struct{}
}

// The RPC dialects of the nodes.
const (
	DialectBtcd = "btcd" // btcd: getblock verbosity 2 under rawtx, searchrawtransactions
	DialectCore = "core" // Bitcoin Core and its forks: getblock with tx, scantxoutset
)

// BtcdBinary finds the pinned btcd: $WHARF_BTCD, ./bin/btcd at the
// module root, $(go env GOPATH)/bin/btcd, or PATH.
func BtcdBinary() (string, error) {
	return goTool("btcd", "WHARF_BTCD", "make btcd builds the pinned one")
}

// LitecoindBinary finds litecoind (Debian's litecoind: Litecoin Core
// 0.21, a fork of Bitcoin Core 0.21) on PATH.
func LitecoindBinary() (string, error) {
	p, err := exec.LookPath("litecoind")
	if err != nil {
		return "", fmt.Errorf("litecoind: %w (apt-get install litecoind)", errNotFound)
	}
	return p, nil
}

// goTool finds an executable built by go install: $env, ./bin/name at
// the module root, $(go env GOPATH)/bin/name, or PATH.
func goTool(name, env, hint string) (string, error) {
	var candidates []string
	if p := os.Getenv(env); p != "" {
		candidates = append(candidates, p)
	}
	if root, err := moduleRoot(); err == nil {
		candidates = append(candidates, filepath.Join(root, "bin", name))
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, gp := range filepath.SplitList(strings.TrimSpace(string(out))) {
			candidates = append(candidates, filepath.Join(gp, "bin", name))
		}
	}
	for _, c := range candidates {
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s: %w (%s)", name, errNotFound, hint)
}

// NewBtcd starts a btcd node of the test's own in regtest (btcd v0.26.2,
// `make btcd`): --txindex --addrindex (so searchrawtransactions works),
// no peers (--nolisten), plain HTTP JSON-RPC on a free loopback port.
// Blocks it generates (`generate N`) pay their coinbase to miningAddr, a
// regtest address. It stops the node and removes its data at cleanup,
// and skips or fails as Need when btcd is not built.
func NewBtcd(tb testing.TB, miningAddr string) *BitcoinNode {
	tb.Helper()
	bin, err := BtcdBinary()
	Need(tb, "btcd", err)
	n := &BitcoinNode{bin: bin, Dialect: DialectBtcd, client: http.Client{Transport: &http.Transport{}}}
	n.args = func(port int) []string {
		return []string{"--regtest", "--configfile=" + filepath.Join(n.Dir, "btcd.conf"), "--txindex", "--addrindex", "--nolisten", "--notls",
			"--rpclisten=127.0.0.1:" + strconv.Itoa(port),
			"--rpcuser=" + n.user, "--rpcpass=" + n.pass,
			"--datadir=" + filepath.Join(n.Dir, "data"), "--logdir=" + filepath.Join(n.Dir, "logs"),
			"--miningaddr=" + miningAddr, "--debuglevel=warn",
			// Tests send what they like: no relay fee floor, no
			// standardness beyond consensus, no orphan limit.
			"--minrelaytxfee=0", "--relaynonstd", "--norelaypriority",
		}
	}
	n.start(tb, "btcd")
	return n
}

// NewLitecoind starts a litecoind node of the test's own in regtest:
// Bitcoin Core's RPC dialect (getblock verbosity 2 with tx, scantxoutset,
// getblockstats, deriveaddresses), no wallet, no peers, a free loopback
// port. Blocks are made with generatetoaddress. It stops the node and
// removes its data at cleanup, and skips or fails as Need when litecoind
// is not installed.
func NewLitecoind(tb testing.TB) *BitcoinNode {
	tb.Helper()
	bin, err := LitecoindBinary()
	Need(tb, "litecoind", err)
	n := &BitcoinNode{bin: bin, Dialect: DialectCore, client: http.Client{Transport: &http.Transport{}}}
	n.args = func(port int) []string {
		return []string{"-regtest", "-server", "-txindex", "-listen=0", "-disablewallet",
			"-datadir=" + n.Dir, "-rpcbind=127.0.0.1", "-rpcallowip=127.0.0.1",
			"-rpcport=" + strconv.Itoa(port), "-port=" + strconv.Itoa(FreePort(tb)),
			"-rpcuser=" + n.user, "-rpcpassword=" + n.pass, "-printtoconsole", "-debuglogfile=0",
			"-minrelaytxfee=0", "-acceptnonstdtxn=1", "-fallbackfee=0.0001",
		}
	}
	n.start(tb, "litecoind")
	return n
}

// start creates the data directory, starts the node (trying new ports
// when it exits at start) and registers its cleanup.
func (n *BitcoinNode) start(tb testing.TB, what string) {
	tb.Helper()
	dir, err := os.MkdirTemp("", "wharf-"+what+"-")
	if err != nil {
		tb.Fatal(err)
	}
	n.Dir, n.user, n.pass = dir, "wharf", "pass-"+strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := os.WriteFile(filepath.Join(dir, "btcd.conf"), nil, 0o600); err != nil {
		tb.Fatal(err)
	}
	for attempt := 0; ; attempt++ {
		n.port = FreePort(tb)
		n.host = "127.0.0.1:" + strconv.Itoa(n.port)
		n.URL = "http://" + n.user + ":" + n.pass + "@" + n.host
		if err = n.Start(); err == nil || attempt == 2 {
			break
		}
	}
	tb.Cleanup(func() {
		n.Stop()
		if tb.Failed() {
			tb.Logf("%s log (end):\n%s", what, n.logTail(4000))
		}
		os.RemoveAll(dir)
	})
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
}

// Start starts the node (again, after Stop) on the same port and data
// directory, and waits until it answers JSON-RPC. Core keeps its chain
// across a restart; btcd removes a regtest chain when it starts, so it
// starts afresh from the genesis block.
func (n *BitcoinNode) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	cmd := exec.Command(n.bin, n.args(n.port)...)
	logf, err := os.OpenFile(filepath.Join(n.Dir, "node.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", filepath.Base(n.bin), err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	n.cmd, n.done = cmd, done
	if err := n.waitReady(done); err != nil {
		cmd.Process.Kill()
		<-done
		n.cmd = nil
		return err
	}
	return nil
}

// waitReady polls getblockcount until the node answers, exits, or 60 s
// pass (a readiness wait, not synchronisation within a test). Core
// answers "Loading block index" (code -28) while it starts.
func (n *BitcoinNode) waitReady(exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var height int64
		if err := n.Call(ctx, &height, "getblockcount"); err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited at start: %s", filepath.Base(n.bin), n.logTail(2000))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s after 60s: %s", filepath.Base(n.bin), n.host, n.logTail(2000))
		case <-tick.C:
		}
	}
}

// Stop stops the node (SIGTERM, which both btcd and Core take as a
// clean shutdown) and waits for it to exit, killing it after 30 s. Core
// waits for its RPC clients' open connections first: close other clients
// before.
func (n *BitcoinNode) Stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return
	}
	// Core's HTTP server waits at shutdown for the connections clients
	// keep open: close ours (a product client must be closed before).
	n.client.CloseIdleConnections()
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(30 * time.Second):
		n.cmd.Process.Kill()
		<-n.done
	}
	n.cmd = nil
}

func (n *BitcoinNode) logTail(size int) string {
	b, _ := os.ReadFile(filepath.Join(n.Dir, "node.log"))
	if logs, _ := filepath.Glob(filepath.Join(n.Dir, "logs", "*", "btcd.log")); len(logs) > 0 {
		b2, _ := os.ReadFile(logs[0])
		b = append(b, b2...)
	}
	if len(b) > size {
		b = b[len(b)-size:]
	}
	return string(b)
}

// Call makes one JSON-RPC call and decodes its result into result (nil:
// ignore it). An error of the node is returned naming the method, its
// message and code.
func (n *BitcoinNode) Call(ctx context.Context, result any, method string, params ...any) error {
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "1.0", "id": n.id.Add(1), "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+n.host, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.SetBasicAuth(n.user, n.pass)
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return fmt.Errorf("%s: HTTP %d: %w", method, resp.StatusCode, err)
	}
	if out.Error != nil {
		return fmt.Errorf("%s: %s (code %d)", method, out.Error.Message, out.Error.Code)
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(out.Result, result); err != nil {
		return fmt.Errorf("%s: result: %w", method, err)
	}
	return nil
}

// MustCall is Call that fails tb on error.
func (n *BitcoinNode) MustCall(tb testing.TB, result any, method string, params ...any) {
	tb.Helper()
	if err := n.Call(context.Background(), result, method, params...); err != nil {
		tb.Fatal(err)
	}
}

// Generate mines count blocks and returns their hashes. Core pays their
// coinbase to addr (generatetoaddress); btcd to the mining address it was
// started with (generate), whatever addr says.
func (n *BitcoinNode) Generate(tb testing.TB, count int, addr string) []string {
	tb.Helper()
	var hashes []string
	if n.Dialect == DialectBtcd {
		n.MustCall(tb, &hashes, "generate", count)
	} else {
		n.MustCall(tb, &hashes, "generatetoaddress", count, addr)
	}
	return hashes
}
