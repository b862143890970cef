package devchain

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/big"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/txpool"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	gethEth "github.com/ethereum/go-ethereum/eth"
	"github.com/ethereum/go-ethereum/eth/catalyst"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/eth/filters"
	"github.com/ethereum/go-ethereum/eth/tracers"
	_ "github.com/ethereum/go-ethereum/eth/tracers/native" // callTracer, for debug_traceBlockByNumber
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/p2p"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/wharfhq/wharf/query"
)

// Config configures the dev chain. The zero value is usable: four
// accounts on a random loopback port, blocks only when the caller steps.
type Config struct {
	// Listen is the JSON-RPC HTTP address; default "127.0.0.1:0".
	Listen string
	// Accounts is the number of demo accounts; default 4, at least 2.
	Accounts int
	// BlockInterval is how often the producer commits a block of demo
	// transfers; 0 starts no producer (tests call Step and Commit).
	BlockInterval time.Duration
	// TxsPerBlock is the number of demo transfers Step sends; default 4.
	TxsPerBlock int
	// Seed makes the producer's choice of transfers repeatable; default 1.
	Seed uint64
	// Showcase makes Step also move ether every other way, in turn: a
	// payout through the forwarder contract (internal, nested), a
	// withdrawal, a self-destruct, a CREATE2 with value, and a call with
	// value whose inner call reverts; the fee recipient earns every
	// block's priority fees. addrd serve --dev sets it.
	Showcase bool
	// Clock paces the producer; default query.SystemClock.
	Clock query.Clock
	// Logger receives the producer's errors; nil discards them.
	Logger *slog.Logger
	// ChainID is the chain's ID; default 1337, as geth --dev.
	ChainID uint64
	// Archive keeps the state of every block (hash scheme, no pruning),
	// as an archive node does, for balances at historical blocks; by
	// default only the recent blocks' state is kept.
	Archive bool
	// Dir keeps the chain's database on disk in that directory, as a
	// node does; by default it is in memory. A chain of more than some
	// ten thousand blocks needs it: geth moves the finalized blocks out of
	// its database every minute, and in memory that costs a pass over the
	// whole database for each block moved.
	Dir string
	// LogIndex keeps geth's log index, as a node does by default, so that
	// eth_getLogs over long ranges reads the index (WaitLogIndex) rather
	// than every block's header; by default there is none, as in
	// go-ethereum's simulated backend.
	LogIndex bool
}

// Chain is an in-process Ethereum chain for development and tests: the
// chain of go-ethereum's simulated backend (ethclient/simulated) built
// the same way, with deterministic demo accounts funded in genesis and a
// demo ERC-20 token, served over real HTTP JSON-RPC on loopback.
//
// It builds the node itself rather than calling simulated.NewBackend so
// that it owns the HTTP listener: it binds exactly Config.Listen
// (port 0 included), and tests can stop and restart serving (StopHTTP,
// StartHTTP) to play a node that stops answering.
type Chain struct {
	// URL is the JSON-RPC endpoint, http://host:port.
	URL string
	// Accounts are the demo accounts, funded with 1,000,000 ETH in
	// genesis and 1,000,000 demo tokens each.
	Accounts []common.Address
	// Token is the demo ERC-20 contract (symbol WDT, 18 decimals).
	Token common.Address
	// FeeRecipient earns the priority fees of every block (the miner).
	FeeRecipient common.Address
	// Forwarder, Destructor and Factory are the demo contracts of
	// contracts.go, in genesis.
	Forwarder, Destructor, Factory common.Address

	cfg     Config
	keys    []*ecdsa.PrivateKey
	signer  types.Signer
	token   abi.ABI
	stack   *node.Node
	backend *gethEth.Ethereum
	beacon  *catalyst.SimulatedBeacon
	client  *ethclient.Client // in-process
	rpc     *rpc.Client       // in-process, with the dev API
	handler http.Handler
	addr    string

	mu      sync.Mutex // serialises sending and sealing
	nonces  map[common.Address]uint64
	rng     *rand.Rand
	steps   int
	wdrawn  uint64 // withdrawals made, their next index
	created uint64 // contracts created by Create2

	srvMu sync.Mutex
	srv   *http.Server

	stop chan struct{}
	done chan struct{}
}

// Start starts the dev chain: genesis, the demo token deployed and
// shared among the demo accounts (two blocks), JSON-RPC served on
// cfg.Listen, and the producer when cfg.BlockInterval > 0. Close stops it.
func Start(ctx context.Context, cfg Config) (*Chain, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Accounts == 0 {
		cfg.Accounts = 4
	}
	if cfg.Accounts < 2 {
		return nil, fmt.Errorf("dev chain: %d accounts, need at least 2", cfg.Accounts)
	}
	if cfg.TxsPerBlock == 0 {
		cfg.TxsPerBlock = 4
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Clock == nil {
		cfg.Clock = query.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	tokenABI, tokenCode, err := demoToken()
	if err != nil {
		return nil, err
	}
	d := &Chain{
		cfg:    cfg,
		token:  tokenABI,
		nonces: make(map[common.Address]uint64),
		rng:    rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
	}
	alloc := types.GenesisAlloc{}
	for i := range cfg.Accounts {
		k := Key(i)
		a := crypto.PubkeyToAddress(k.PublicKey)
		d.keys = append(d.keys, k)
		d.Accounts = append(d.Accounts, a)
		alloc[a] = types.Account{Balance: devFunds}
	}
	d.FeeRecipient = crypto.PubkeyToAddress(Key(cfg.Accounts).PublicKey)
	d.Forwarder, d.Destructor, d.Factory = forwarderAddr, destructorAddr, factoryAddr
	alloc[forwarderAddr] = types.Account{Code: forwarderCode, Balance: new(big.Int)}
	alloc[destructorAddr] = types.Account{Code: destructorCode, Balance: new(big.Int)}
	alloc[factoryAddr] = types.Account{Code: factoryCode, Balance: new(big.Int)}
	if err := d.startChain(alloc); err != nil {
		return nil, err
	}
	if err := d.deployToken(ctx, tokenCode); err != nil {
		d.closeChain()
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		d.closeChain()
		return nil, fmt.Errorf("dev chain: listen: %w", err)
	}
	d.addr = ln.Addr().String()
	d.URL = "http://" + d.addr
	d.serve(ln)
	if cfg.BlockInterval > 0 {
		d.stop, d.done = make(chan struct{}), make(chan struct{})
		go d.produce()
	}
	return d, nil
}

// startChain builds the node as ethclient/simulated does: every fork
// active from genesis, full sync, no peers, blocks sealed on demand by
// the simulated beacon.
func (d *Chain) startChain(alloc types.GenesisAlloc) error {
	nodeConf := node.DefaultConfig
	nodeConf.DataDir = d.cfg.Dir
	nodeConf.P2P = p2p.Config{NoDiscovery: true}
	genesisAlloc := core.SystemContractAllocs()
	maps.Copy(genesisAlloc, alloc)
	ethConf := ethconfig.Defaults
	chainConf := *params.AllDevChainProtocolChanges
	if d.cfg.ChainID != 0 {
		chainConf.ChainID = new(big.Int).SetUint64(d.cfg.ChainID)
	}
	ethConf.Genesis = &core.Genesis{
		Config:   &chainConf,
		GasLimit: ethconfig.Defaults.Miner.GasCeil,
		Alloc:    genesisAlloc,
	}
	ethConf.SyncMode = ethconfig.FullSync
	if d.cfg.Archive {
		ethConf.StateScheme = rawdb.HashScheme
		ethConf.NoPruning = true
	}
	ethConf.TxPool.NoLocals = true
	// The miner fills a block for at most Recommit (2 s by default) and
	// seals what it has then: under load (-race, both cores busy) a block
	// lost transactions to the next one. Commit waits for the whole block.
	ethConf.Miner.Recommit = time.Minute
	// As ethclient/simulated: no log index unless asked, eth_getLogs
	// scans every block's header, and the receipts of those that match.
	ethConf.LogNoHistory = !d.cfg.LogIndex
	// Room for a benchmark's blocks of a hundred transfers from a few accounts.
	ethConf.TxPool.AccountSlots = 1024
	ethConf.TxPool.GlobalSlots = 16384
	ethConf.TxPool.AccountQueue = 1024
	ethConf.TxPool.GlobalQueue = 16384

	stack, err := node.New(&nodeConf)
	if err != nil {
		return fmt.Errorf("dev chain: node: %w", err)
	}
	backend, err := gethEth.New(stack, &ethConf)
	if err != nil {
		stack.Close()
		return fmt.Errorf("dev chain: eth service: %w", err)
	}
	fs := filters.NewFilterSystem(backend.APIBackend, filters.Config{})
	stack.RegisterAPIs([]rpc.API{{Namespace: "eth", Service: filters.NewFilterAPI(fs)}})
	// debug_traceBlockByNumber with the built-in tracers, as geth serves it.
	stack.RegisterAPIs(tracers.APIs(backend.APIBackend))
	// The beacon seals blocks when Commit is called only: a period of
	// zero would make its dev API seal on every new transaction, and it is
	// never started, so the period does not run either. Its dev API
	// (dev_addWithdrawal, dev_setFeeRecipient) is served as geth --dev does.
	beacon, err := catalyst.NewSimulatedBeacon(1<<32, d.FeeRecipient, backend)
	if err != nil {
		stack.Close()
		return fmt.Errorf("dev chain: beacon: %w", err)
	}
	catalyst.RegisterSimulatedBeaconAPIs(stack, beacon)
	if err := stack.Start(); err != nil {
		stack.Close()
		return fmt.Errorf("dev chain: start node: %w", err)
	}
	if err := beacon.Fork(backend.BlockChain().GetCanonicalHash(0)); err != nil {
		beacon.Stop()
		stack.Close()
		return fmt.Errorf("dev chain: beacon: %w", err)
	}
	handler, err := stack.RPCHandler()
	if err != nil {
		beacon.Stop()
		stack.Close()
		return fmt.Errorf("dev chain: rpc handler: %w", err)
	}
	d.stack, d.backend, d.beacon, d.handler = stack, backend, beacon, handler
	d.rpc = stack.Attach()
	d.client = ethclient.NewClient(d.rpc)
	d.signer = types.LatestSigner(backend.BlockChain().Config())
	return nil
}

// deployToken deploys the demo token from account 0 and gives every
// other account its share.
func (d *Chain) deployToken(ctx context.Context, code []byte) error {
	supply := new(big.Int).Mul(devTokens, big.NewInt(int64(len(d.Accounts))))
	args, err := d.token.Pack("", supply)
	if err != nil {
		return fmt.Errorf("dev chain: token constructor: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Token = crypto.CreateAddress(d.Accounts[0], d.nonces[d.Accounts[0]])
	if _, err := d.send(ctx, 0, nil, nil, append(code, args...), 2_000_000); err != nil {
		return fmt.Errorf("dev chain: deploy token: %w", err)
	}
	if err := d.commitAll(); err != nil {
		return fmt.Errorf("dev chain: deploy token: %w", err)
	}
	for i := 1; i < len(d.Accounts); i++ {
		if _, err := d.sendToken(ctx, 0, d.Accounts[i], devTokens, tokenGas); err != nil {
			return fmt.Errorf("dev chain: share tokens: %w", err)
		}
	}
	if err := d.commitAll(); err != nil {
		return fmt.Errorf("dev chain: share tokens: %w", err)
	}
	code, err = d.client.CodeAt(ctx, d.Token, nil)
	if err != nil || len(code) == 0 {
		return fmt.Errorf("dev chain: token not deployed at %s: %v", d.Token.Hex(), err)
	}
	return nil
}

// Commit seals the pending transactions into a new block and returns its
// hash, once the transaction pool has moved to it: a transaction sent
// next is checked against the state after this block (the pool resets
// in the background; a sender just funded here was refused).
func (d *Chain) Commit() common.Hash {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.beacon.Commit()
	d.backend.TxPool().Sync()
	return h
}

// commitAll seals the pool's transactions, with the pool synced before
// and after, and seals again (a few times at most) while the head has
// not mined them all: the chain then starts with nothing pending, as
// CommitEmpty requires. A block built while the pool still reset to the
// previous head once left the setup's transactions pending (TestCommitEmpty
// failed once in CI, on a loaded machine). d.mu is held.
func (d *Chain) commitAll() error {
	pool, bc := d.backend.TxPool(), d.backend.BlockChain()
	for range 4 {
		if err := pool.Sync(); err != nil {
			return err
		}
		d.beacon.Commit()
		if err := pool.Sync(); err != nil {
			return err
		}
		switch unmined, err := d.unmined(pool, bc); {
		case err != nil:
			return err
		case !unmined:
			return nil
		}
	}
	return errors.New("transactions still pending after 4 blocks")
}

// unmined reports whether the pool holds a transaction the head has not
// mined. The pool learns of a new head from an event, and Sync resets it
// to the newest head it has been told of: right after a Commit it may
// still list transactions the head holds. Those have a nonce below their
// sender's at the head, and are not pending.
func (d *Chain) unmined(pool *txpool.TxPool, bc *core.BlockChain) (bool, error) {
	pending, _ := pool.Pending(txpool.PendingFilter{})
	if len(pending) == 0 {
		return false, nil
	}
	st, err := bc.State()
	if err != nil {
		return false, err
	}
	for from, txs := range pending {
		for _, lt := range txs {
			if tx := lt.Resolve(); tx != nil && tx.Nonce() >= st.GetNonce(from) {
				return true, nil
			}
		}
	}
	return false, nil
}

// CommitEmpty seals n empty blocks on the head and returns the last one's
// hash: on an archive chain all but the last are built and inserted in
// bulk (core.GenerateChain, then InsertChain, which executes and verifies
// them as any imported block, without the engine API's rounds of each
// Commit), a second apart, with the fee recipient as their coinbase; the
// last is sealed as Commit does, so that the beacon follows. For long
// chains in benchmarks. Errors when transactions are pending: they would
// not be in these blocks.
func (d *Chain) CommitEmpty(n int) (common.Hash, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n <= 0 {
		_, h := d.Head()
		return h, nil
	}
	pool := d.backend.TxPool()
	if err := pool.Sync(); err != nil {
		return common.Hash{}, fmt.Errorf("dev chain: empty blocks: %w", err)
	}
	bc := d.backend.BlockChain()
	switch unmined, err := d.unmined(pool, bc); {
	case err != nil:
		return common.Hash{}, fmt.Errorf("dev chain: empty blocks: %w", err)
	case unmined:
		return common.Hash{}, errors.New("dev chain: empty blocks: transactions are pending")
	}
	if d.cfg.Archive {
		// The generator reads and writes the state by hash, as the
		// archive chain keeps it.
		for left := n - 1; left > 0; {
			parent := bc.GetBlockByHash(bc.CurrentBlock().Hash())
			m := min(left, 1024)
			blocks, _ := core.GenerateChain(bc.Config(), parent, d.backend.Engine(), d.backend.ChainDb(), m, func(_ int, b *core.BlockGen) {
				b.SetCoinbase(d.FeeRecipient)
				b.OffsetTime(-9) // a second after its parent, not ten
			})
			if _, err := bc.InsertChain(blocks); err != nil {
				return common.Hash{}, fmt.Errorf("dev chain: empty blocks: %w", err)
			}
			left -= m
		}
		// A second after the head: the beacon's next timestamps follow.
		if err := d.beacon.AdjustTime(time.Second); err != nil {
			return common.Hash{}, fmt.Errorf("dev chain: empty blocks: %w", err)
		}
		_, h := d.Head()
		return h, nil
	}
	var h common.Hash
	for range n {
		h = d.beacon.Commit()
	}
	return h, nil
}

// WaitLogIndex waits until the log index (Config.LogIndex) covers
// every block up to the head: geth builds it in the background.
func (d *Chain) WaitLogIndex(ctx context.Context) error {
	if !d.cfg.LogIndex {
		return errors.New("dev chain: no log index (Config.LogIndex)")
	}
	mb := d.backend.APIBackend.NewMatcherBackend()
	defer mb.Close()
	// The indexer says nothing when it is done: its range is asked again.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		r, err := mb.SyncLogIndex(ctx)
		if err != nil {
			return fmt.Errorf("dev chain: log index: %w", err)
		}
		head, _ := d.Head()
		if !r.IndexedBlocks.IsEmpty() && r.IndexedBlocks.First() <= 1 && r.IndexedBlocks.Last() >= head {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dev chain: log index at %d-%d of %d: %w", r.IndexedBlocks.First(), r.IndexedBlocks.Last(), head, ctx.Err())
		case <-tick.C:
		}
	}
}

// Fork makes the block parent the head, dropping the blocks above it from
// the canonical chain; the next Commit builds a side chain on it (a
// reorg). Transactions of the dropped blocks may be mined again.
func (d *Chain) Fork(parent common.Hash) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.beacon.Fork(parent); err != nil {
		return fmt.Errorf("dev chain: fork at %s: %w", parent.Hex(), err)
	}
	clear(d.nonces) // read again from the new head
	return nil
}

// Mined reports whether the transaction hash is in a block of the chain.
func (d *Chain) Mined(ctx context.Context, hash common.Hash) bool {
	r, err := d.client.TransactionReceipt(ctx, hash)
	return err == nil && r != nil
}

// Head returns the current head block's number and hash.
func (d *Chain) Head() (uint64, common.Hash) {
	h := d.backend.BlockChain().CurrentBlock()
	return h.Number.Uint64(), h.Hash()
}

// BlockHash returns the canonical hash of block number.
func (d *Chain) BlockHash(number uint64) common.Hash {
	return d.backend.BlockChain().GetCanonicalHash(number)
}

// Close stops the producer, the JSON-RPC server and the chain.
func (d *Chain) Close() error {
	if d.stop != nil {
		close(d.stop)
		<-d.done
		d.stop = nil
	}
	err := d.StopHTTP()
	return errors.Join(err, d.closeChain())
}

func (d *Chain) closeChain() error {
	d.client.Close()
	return errors.Join(d.beacon.Stop(), d.stack.Close())
}
