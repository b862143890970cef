// Package devnode runs a btcd node in regtest for addrd serve --dev: a
// chain of its own in a temporary directory, mined to maturity at start,
// with demo payments between demo addresses and to a demo descriptor
// wallet, one block each, signed with btcd's packages.
package devnode

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil/v2/hdkeychain"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/wharfhq/wharf/query/utxo"
)

// ErrNoBtcd: no btcd executable was found.
var ErrNoBtcd = errors.New("btcd not found")

// Binary finds btcd: on PATH, else in $GOBIN, $GOPATH/bin or ~/go/bin,
// where go install (make btcd) puts it.
func Binary() (string, error) {
	if p, err := exec.LookPath("btcd"); err == nil {
		return p, nil
	}
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	for _, gp := range filepath.SplitList(os.Getenv("GOPATH")) {
		dirs = append(dirs, filepath.Join(gp, "bin"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "btcd")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w on PATH or in ~/go/bin (make btcd builds it)", ErrNoBtcd)
}

// Config configures a Node.
type Config struct {
	// Binary is btcd's path; "" finds it (Binary).
	Binary string
	// BlockInterval is how often a demo payment is made and mined;
	// default 2 s.
	BlockInterval time.Duration
	// Logger receives what the node does; nil discards it.
	Logger *slog.Logger
}

// Node is a running btcd in regtest with its demo payments.
type Node struct {
	// URL is its JSON-RPC, http://USER:PASS@127.0.0.1:PORT.
	URL string
	// Network is Bitcoin's regtest.
	Network *utxo.Network
	// Addresses are the demo addresses the payments go to.
	Addresses []string
	// Wallet are the demo wallet's descriptors: its receive and change
	// branches (wpkh, a tpub of a fixed seed); the payments go to its
	// receive addresses in turn.
	Wallet []string

	endpoint, user, pass string
	client               http.Client
	dir                  string
	cmd                  *exec.Cmd
	exited               chan struct{}
	key                  *btcec.PrivateKey
	script               []byte
	receive              *hdkeychain.ExtendedKey
	log                  *slog.Logger
	stop                 context.CancelFunc
	wg                   sync.WaitGroup
	next                 uint64 // the next coinbase to spend
	paid                 uint32 // payments made
}

// Start starts btcd in a temporary directory, mines 101 blocks to the
// miner's key and starts the demo payments, until Close.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.Binary == "" {
		bin, err := Binary()
		if err != nil {
			return nil, err
		}
		cfg.Binary = bin
	}
	if cfg.BlockInterval <= 0 {
		cfg.BlockInterval = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	net, err := utxo.NetworkByName("bitcoin-regtest")
	if err != nil {
		return nil, err
	}
	n := &Node{Network: net, log: cfg.Logger, next: 1, exited: make(chan struct{})}
	n.key, _ = btcec.PrivKeyFromBytes(bytes.Repeat([]byte{0xd1}, 32))
	n.script = p2wpkh(n.key.PubKey())
	miner, err := utxo.AddressFromScript(net, n.script)
	if err != nil {
		return nil, err
	}
	for i := byte(1); i <= 3; i++ {
		k, _ := btcec.PrivKeyFromBytes(bytes.Repeat([]byte{0xd1 + i}, 32))
		a, err := utxo.AddressFromScript(net, p2wpkh(k.PubKey()))
		if err != nil {
			return nil, err
		}
		n.Addresses = append(n.Addresses, a.String)
	}
	master, err := hdkeychain.NewMaster(bytes.Repeat([]byte{0xde}, 32), net.Params)
	if err != nil {
		return nil, err
	}
	tpub, err := master.Neuter()
	if err != nil {
		return nil, err
	}
	if n.receive, err = tpub.Derive(0); err != nil {
		return nil, err
	}
	n.Wallet = []string{"wpkh(" + tpub.String() + "/0/*)", "wpkh(" + tpub.String() + "/1/*)"}

	if n.dir, err = os.MkdirTemp("", "addrd-dev-btcd-"); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		n.Close()
		return nil, err
	}
	n.user, n.pass = "addrd", strconv.FormatInt(time.Now().UnixNano(), 36)
	n.endpoint = "http://127.0.0.1:" + strconv.Itoa(port)
	n.URL = "http://" + n.user + ":" + n.pass + "@127.0.0.1:" + strconv.Itoa(port)
	if err := os.WriteFile(filepath.Join(n.dir, "btcd.conf"), nil, 0o600); err != nil {
		n.Close()
		return nil, err
	}
	n.cmd = exec.Command(cfg.Binary, "--regtest", "--configfile="+filepath.Join(n.dir, "btcd.conf"), "--txindex", "--addrindex",
		"--nolisten", "--notls", "--rpclisten=127.0.0.1:"+strconv.Itoa(port), "--rpcuser="+n.user, "--rpcpass="+n.pass,
		"--datadir="+filepath.Join(n.dir, "data"), "--logdir="+filepath.Join(n.dir, "logs"),
		"--miningaddr="+miner.String, "--debuglevel=warn")
	if err := n.cmd.Start(); err != nil {
		n.Close()
		return nil, fmt.Errorf("btcd: %w", err)
	}
	go func() { n.cmd.Wait(); close(n.exited) }()
	if err := n.waitReady(ctx); err != nil {
		n.Close()
		return nil, err
	}
	if err := n.call(ctx, nil, "generate", utxo.CoinbaseMaturity+1); err != nil {
		n.Close()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	n.stop = cancel
	n.wg.Go(func() { n.run(runCtx, cfg.BlockInterval) })
	return n, nil
}

// waitReady waits up to 20 s for the node's JSON-RPC.
func (n *Node) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		var h uint64
		err := n.call(ctx, &h, "getblockcount")
		if err == nil {
			return nil
		}
		select {
		case <-n.exited:
			return errors.New("btcd exited at start")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("btcd did not answer in 20 s: %w", err)
		}
	}
}

// run makes a payment and mines it every interval.
func (n *Node) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := n.pay(ctx); err != nil && ctx.Err() == nil {
			n.log.Warn("dev btcd: payment failed", "err", err)
		}
	}
}

// pay spends the next matured coinbase: a demo address and the wallet's
// next receive address get a payment, the rest less the fee goes back to
// the miner; then a block.
func (n *Node) pay(ctx context.Context) error {
	var hash string
	if err := n.call(ctx, &hash, "getblockhash", n.next); err != nil {
		return err
	}
	var b struct {
		Tx []string `json:"tx"`
	}
	if err := n.call(ctx, &b, "getblock", hash, 1); err != nil {
		return err
	}
	prev, err := chainhash.NewHashFromStr(b.Tx[0])
	if err != nil {
		return err
	}
	value := int64(5_000_000_000) >> (n.next / 150) // regtest halves every 150 blocks
	k, err := n.receive.Derive(n.paid % 40)
	if err != nil {
		return err
	}
	pub, err := k.ECPubKey()
	if err != nil {
		return err
	}
	to, err := utxo.ParseAddress(n.Network, n.Addresses[n.paid%uint32(len(n.Addresses))])
	if err != nil {
		return err
	}
	const fee = 1000
	a, w := int64(1_000_000+int64(n.paid%7)*250_000), int64(2_000_000)
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(wire.NewTxIn(wire.NewOutPoint(prev, 0), nil, nil))
	tx.AddTxOut(wire.NewTxOut(a, to.Script))
	tx.AddTxOut(wire.NewTxOut(w, p2wpkh(pub)))
	tx.AddTxOut(wire.NewTxOut(value-a-w-fee, n.script))
	fetcher := txscript.NewCannedPrevOutputFetcher(n.script, value)
	wit, err := txscript.WitnessSignature(tx, txscript.NewTxSigHashes(tx, fetcher), 0, value, n.script, txscript.SigHashAll, n.key, true)
	if err != nil {
		return err
	}
	tx.TxIn[0].Witness = wit
	var buf bytes.Buffer
	if err := tx.Serialize(&buf); err != nil {
		return err
	}
	if err := n.call(ctx, nil, "sendrawtransaction", hex.EncodeToString(buf.Bytes())); err != nil {
		return err
	}
	n.next++
	n.paid++
	return n.call(ctx, nil, "generate", 1)
}

// Close stops the payments and the node and removes its directory.
func (n *Node) Close() {
	if n.stop != nil {
		n.stop()
		n.wg.Wait()
	}
	n.client.CloseIdleConnections()
	if n.cmd != nil && n.cmd.Process != nil {
		n.cmd.Process.Signal(os.Interrupt)
		select {
		case <-n.exited:
		case <-time.After(10 * time.Second):
			n.cmd.Process.Kill()
			<-n.exited
		}
	}
	if n.dir != "" {
		os.RemoveAll(n.dir)
	}
}

// call makes a JSON-RPC call; out nil ignores the result.
func (n *Node) call(ctx context.Context, out any, method string, params ...any) error {
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "1.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.SetBasicAuth(n.user, n.pass)
	resp, err := n.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("%s: HTTP %d: %w", method, resp.StatusCode, err)
	}
	if r.Error != nil {
		return fmt.Errorf("%s: %s", method, r.Error.Message)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(r.Result, out)
}

func p2wpkh(pub *btcec.PublicKey) []byte {
	return append([]byte{0x00, 0x14}, address.Hash160(pub.SerializeCompressed())...)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
