package opgeth

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/wharfhq/wharf/internal/testenv"
)

// Node is a running op-geth on loopback with its sequencer. Its blocks
// are made only by Mine (and the helpers on it), one at a time.
type Node struct {
	// URL is the HTTP JSON-RPC endpoint, http://127.0.0.1:PORT (eth, net,
	// web3, debug with the tracers, txpool).
	URL string
	// Dir is the node's data directory (its log is Dir/op-geth.log).
	Dir string
	// Keys sign the transactions of Tx.From; Accounts are their
	// addresses, each funded with 1,000,000 ether at genesis.
	Keys     []*ecdsa.PrivateKey
	Accounts []common.Address
	// FeeRecipient is every block's fee recipient (op-node's sequencer fee
	// vault), which earns the priority fees.
	FeeRecipient common.Address

	authURL string
	jwt     []byte
	proc    *testenv.Process

	mu     sync.Mutex // one block at a time
	fees   Fees
	hashes []common.Hash // canonical block hashes by number
	head   header
	// SafeLag and FinalLag are how many blocks behind the head the
	// sequencer calls the safe and the finalized block.
	safeLag, finalLag uint64
}

type header struct {
	Number    uint64
	Hash      common.Hash
	Timestamp uint64
	BaseFee   *big.Int
}

// Config tunes New; the zero value is usable.
type Config struct {
	// Accounts is the number of funded accounts; default 4.
	Accounts int
	// Fees are the L1 fee parameters at genesis; default DefaultFees.
	Fees *Fees
	// SafeLag and FinalLag are how far behind the head the safe and the
	// finalized blocks are; default 2 and 4.
	SafeLag, FinalLag uint64
}

// New starts op-geth on a fresh OP chain of the test's own, and stops it
// (removing its data) at cleanup. It skips or fails as testenv.Need when
// op-geth is not built. When the test fails, the end of the node's log is
// in the test's output.
func New(tb testing.TB, cfg Config) *Node {
	tb.Helper()
	bin, err := testenv.OPGethBinary()
	testenv.Need(tb, "op-geth", err)
	if cfg.Accounts == 0 {
		cfg.Accounts = 4
	}
	fees := DefaultFees()
	if cfg.Fees != nil {
		fees = *cfg.Fees
	}
	if cfg.SafeLag == 0 && cfg.FinalLag == 0 {
		cfg.SafeLag, cfg.FinalLag = 2, 4
	}
	dir, err := os.MkdirTemp("", "wharf-op-geth-")
	if err != nil {
		tb.Fatal(err)
	}
	n := &Node{Dir: dir, fees: fees, safeLag: cfg.SafeLag, finalLag: cfg.FinalLag,
		FeeRecipient: common.HexToAddress("0x4200000000000000000000000000000000000011")}
	tb.Cleanup(func() {
		n.kill()
		if tb.Failed() {
			tb.Logf("op-geth log (end):\n%s", n.logTail(4000))
		}
		os.RemoveAll(dir)
	})
	for i := range cfg.Accounts {
		k, err := crypto.ToECDSA(crypto.Keccak256([]byte("wharf op-geth account " + strconv.Itoa(i))))
		if err != nil {
			tb.Fatal(err)
		}
		n.Keys = append(n.Keys, k)
		n.Accounts = append(n.Accounts, crypto.PubkeyToAddress(k.PublicKey))
	}
	// Blocks are 2 s apart from a genesis far enough in the past that no
	// test's chain reaches the present.
	g, err := genesis(uint64(time.Now().Unix())-10_000_000, fees, n.Accounts, new(big.Int).Mul(big.NewInt(1_000_000), big.NewInt(1e18)))
	if err != nil {
		tb.Fatal(err)
	}
	n.jwt = make([]byte, 32)
	rand.Read(n.jwt)
	for name, b := range map[string][]byte{"genesis.json": g, "jwt.hex": []byte(hex.EncodeToString(n.jwt))} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := exec.Command(bin, "init", "--datadir", data, "--state.scheme", "hash", filepath.Join(dir, "genesis.json")).CombinedOutput(); err != nil {
		tb.Fatalf("op-geth init: %v\n%s", err, out)
	}
	// A port found free may be taken before op-geth binds it: try again
	// with new ports when the node exits at start.
	for attempt := 0; ; attempt++ {
		port, auth := testenv.FreePort(tb), testenv.FreePort(tb)
		n.URL, n.authURL = "http://127.0.0.1:"+strconv.Itoa(port), "http://127.0.0.1:"+strconv.Itoa(auth)
		if err = n.start(bin, data, port, auth); err == nil || attempt == 2 {
			break
		}
	}
	if err != nil {
		tb.Fatalf("op-geth: %v", err)
	}
	var g0 rpcHeader
	if err := n.Call(context.Background(), &g0, "eth_getBlockByNumber", "0x0", false); err != nil {
		tb.Fatalf("op-geth genesis: %v", err)
	}
	n.head = g0.header()
	n.hashes = []common.Hash{n.head.Hash}
	return n
}

// Pid is the process id of op-geth: a benchmark reads the node's CPU
// time from /proc.
func (n *Node) Pid() int { return n.proc.Pid() }

func (n *Node) start(bin, data string, port, auth int) error {
	args := []string{"--datadir", data, "--networkid", strconv.Itoa(ChainID),
		"--http", "--http.addr", "127.0.0.1", "--http.port", strconv.Itoa(port), "--http.api", "eth,net,web3,debug,txpool",
		"--authrpc.addr", "127.0.0.1", "--authrpc.port", strconv.Itoa(auth), "--authrpc.jwtsecret", filepath.Join(n.Dir, "jwt.hex"),
		"--ipcdisable", "--port", "0", "--nodiscover", "--maxpeers", "0", "--syncmode", "full",
		"--gcmode", "archive", "--state.scheme", "hash", "--rollup.disabletxpoolgossip", "--verbosity", "2"}
	// A readiness wait on both endpoints, not synchronisation.
	p, err := testenv.StartProcess(filepath.Join(n.Dir, "op-geth.log"), 50*time.Millisecond, func(ctx context.Context) error {
		var head string
		if err := n.Call(ctx, &head, "eth_blockNumber"); err != nil {
			return err
		}
		return n.engine(ctx, nil, "eth_chainId")
	}, bin, args...)
	if err != nil {
		return fmt.Errorf("op-geth at %s: %w", n.URL, err)
	}
	n.proc = p
	return nil
}

func (n *Node) kill() {
	if n.proc != nil {
		n.proc.Kill()
		n.proc = nil
	}
}

func (n *Node) logTail(max int) string {
	return (&testenv.Process{Log: filepath.Join(n.Dir, "op-geth.log")}).LogTail(max)
}

// Call makes one JSON-RPC call on URL and decodes its result into result
// (nil: ignore it). A JSON-RPC error is an error naming the method.
func (n *Node) Call(ctx context.Context, result any, method string, params ...any) error {
	return testenv.RPCClient{URL: n.URL}.Call(ctx, result, method, params...)
}

// engine makes one Engine API call on the authenticated endpoint.
func (n *Node) engine(ctx context.Context, result any, method string, params ...any) error {
	token := jwtToken(n.jwt, time.Now())
	return testenv.RPCClient{URL: n.authURL, Auth: func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }}.Call(ctx, result, method, params...)
}

// Receipt returns the receipt of the transaction hash (mined: Mine has
// returned), as the node serves it.
func (n *Node) Receipt(ctx context.Context, hash common.Hash) (map[string]any, error) {
	var r map[string]any
	// A fresh node answers "transaction indexing is in progress" for a
	// while: a readiness wait.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := n.Call(ctx, &r, "eth_getTransactionReceipt", hash)
		if err == nil && r != nil {
			return r, nil
		}
		if err != nil && !strings.Contains(err.Error(), "indexing is in progress") {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("receipt of %s: none after 30s (%v)", hash, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
