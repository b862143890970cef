package query

import (
	"context"
	"time"
)

// Source reads a chain from a node. query/eth implements it on
// go-ethereum's JSON-RPC client. Every method returns an error wrapping
// ErrUnavailable when the node cannot be reached, times out or answers
// with a server error; the fetcher retries those later.
//
// Addresses and hashes are lowercase 0x-hex; amounts exact decimal strings.
type Source interface {
	// ChainID returns the node's chain ID (eth_chainId).
	ChainID(ctx context.Context) (uint64, error)
	// Head returns the number of the node's latest block.
	Head(ctx context.Context) (uint64, error)
	// Blocks returns the blocks numbered from to to (inclusive) with their
	// transactions, in order. It returns fewer when the node does not have
	// them yet, never a gap.
	Blocks(ctx context.Context, from, to uint64) ([]SourceBlock, error)
	// Transfers returns the ERC-20 Transfer logs of blocks from to to
	// (inclusive), in chain order. With addresses nil it returns every
	// Transfer log, so that one call serves any number of subscriptions;
	// otherwise only those from or to one of addresses (for a backfill).
	Transfers(ctx context.Context, from, to uint64, addresses []string) ([]TokenTransfer, error)
	// Receipts returns the receipts of the transactions hashes of block b,
	// in the order of hashes. Errors: ErrNotFound when the block is no
	// longer canonical.
	Receipts(ctx context.Context, b Block, hashes []string) ([]Receipt, error)
	// BlockReceipts returns every receipt of block b, in order, with the
	// ERC-20 Transfer logs in them: cheaper than Transfers and Receipts
	// when most of a block matches. Errors: ErrNotFound when the block is
	// no longer canonical.
	BlockReceipts(ctx context.Context, b Block) ([]Receipt, []TokenTransfer, error)
	// Balances reads the balances asked for at block number block, in the
	// order of the queries (symbol and decimals of a token read once).
	Balances(ctx context.Context, block uint64, queries []BalanceQuery) ([]Balance, error)
}

// SourceBlock is a block as the node serves it, with its transactions.
type SourceBlock struct {
	Block
	Txs []SourceTx
}

// SourceTx is a transaction of a SourceBlock, before its receipt is read.
type SourceTx struct {
	Hash  string
	Index uint
	From  string
	To    string // "" for a contract creation
	Value string // wei, exact decimal
	Nonce uint64
}

// TokenTransfer is an ERC-20 Transfer log.
type TokenTransfer struct {
	BlockNumber uint64
	BlockHash   string
	TxHash      string
	TxIndex     uint
	LogIndex    int
	Contract    string
	From        string
	To          string
	Amount      string // exact decimal, the token's smallest unit
}

// Receipt is what the fetcher keeps of a transaction receipt.
type Receipt struct {
	TxHash string
	Status string // StatusSuccess or StatusFailed
	Fee    string // wei: gasUsed × effectiveGasPrice
}

// BalanceQuery asks for the balance of one asset of an address:
// the native one when Contract is "", else the ERC-20 at Contract.
type BalanceQuery struct {
	Address  string
	Contract string
}

// Clock is the time the fetcher and the dev chain's producer run on;
// tests pass their own.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives the time once d has passed.
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the Clock of the running process.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
