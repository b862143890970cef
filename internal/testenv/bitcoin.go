package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
	client     http.Client
	mu         sync.Mutex
	proc       *Process
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
// getblockstats, deriveaddresses), no wallet, no peers, BIP 125
// replacement on, a free loopback port. Blocks are made with generatetoaddress. It stops the node and
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
			// Litecoin Core replaces by fee (BIP 125) only when told.
			"-mempoolreplacement=1",
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
	// Core answers "Loading block index" (code -28) while it starts.
	p, err := StartProcess(filepath.Join(n.Dir, "node.log"), 20*time.Millisecond, func(ctx context.Context) error {
		var height int64
		return n.Call(ctx, &height, "getblockcount")
	}, n.bin, n.args(n.port)...)
	if err != nil {
		return fmt.Errorf("%s at %s: %w", filepath.Base(n.bin), n.host, err)
	}
	n.proc = p
	return nil
}

// Stop stops the node (SIGTERM, which both btcd and Core take as a
// clean shutdown) and waits for it to exit, killing it after 30 s. Core
// waits for its RPC clients' open connections first: close other clients
// before.
func (n *BitcoinNode) Stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return
	}
	// Core's HTTP server waits at shutdown for the connections clients
	// keep open: close ours (a product client must be closed before).
	n.client.CloseIdleConnections()
	n.proc.Stop(30 * time.Second)
	n.proc = nil
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
	return RPCClient{URL: "http://" + n.host, Version: "1.0", HTTP: &n.client,
		Auth: func(r *http.Request) { r.SetBasicAuth(n.user, n.pass) }}.Call(ctx, result, method, params...)
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
