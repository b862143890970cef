package query

import (
	"context"
	"time"
)

// Source reads a chain from a node. query/evm implements it on
// go-ethereum's JSON-RPC client. Every method returns an error wrapping
// ErrUnavailable when the node cannot be reached, times out or answers
// with a server error; the fetcher retries those later.
//
// Addresses and hashes are lowercase 0x-hex; amounts are Amounts, made
// by the adapter from the node's numbers (never parsed again).
type Source interface {
	// ChainID returns the node's chain ID (eth_chainId).
	ChainID(ctx context.Context) (uint64, error)
	// Head returns the number of the node's latest block.
	Head(ctx context.Context) (uint64, error)
	// Blocks returns the blocks numbered from to to (inclusive) with their
	// transactions, in order. It returns fewer when the node does not have
	// them yet, never a gap.
	Blocks(ctx context.Context, from, to uint64) ([]SourceBlock, error)
	// Transfers returns the token transfer logs of blocks from to to
	// (inclusive), in chain order: ERC-20 and ERC-721 Transfer, ERC-1155
	// TransferSingle and TransferBatch (one TokenTransfer an id). With addresses nil it returns every
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
	// Miner is the fee recipient, lowercase 0x-hex.
	Miner string
	// BaseFee is the EIP-1559 base fee in wei; zero before London.
	BaseFee Amount
	// Withdrawals are the block's EIP-4895 withdrawals, in order.
	Withdrawals []Withdrawal
}

// Withdrawal is an EIP-4895 withdrawal, its amount converted to wei.
type Withdrawal struct {
	Index     uint64
	Validator uint64 // the beacon-chain validator's index
	Address   string
	Amount    Amount // wei (the node says gwei)
}

// SourceTx is a transaction of a SourceBlock, before its receipt is read.
type SourceTx struct {
	Hash  string
	Index uint
	From  string
	To    string // "" for a contract creation
	Value Amount // wei
	Nonce uint64
	// Type, GasLimit and Method (the input's 4-byte selector or "") as in Transaction.
	Type     uint8
	GasLimit uint64
	Method   string
	// Created is the address of the contract a creating transaction (To
	// "") makes, from sender and nonce.
	Created string
	// Input is the transaction's input (calldata), as the node sent it;
	// it is written out in hex only for the transactions kept.
	Input []byte
	// Mint is what an OP-stack deposit mints to From (Transaction.Mint).
	Mint Amount
	// System marks a transaction of the chain's own machinery that moves
	// no one's balance (an OP-stack block's L1-info deposit): it is never
	// matched.
	System bool
}

// TokenTransfer is a token transfer log: an ERC-20 or ERC-721 Transfer,
// an ERC-1155 TransferSingle, or one id of an ERC-1155 TransferBatch
// (the ids of one batch share its log index).
type TokenTransfer struct {
	BlockNumber uint64
	BlockHash   string
	TxHash      string
	TxIndex     uint
	LogIndex    int
	Contract    string
	From        string
	To          string
	Amount      Amount // the token's smallest unit; 1 for ERC-721
	// Asset is AssetERC20, AssetERC721 or AssetERC1155; TokenID the id
	// of an ERC-721 or ERC-1155 token, decimal ("" for ERC-20).
	Asset   string
	TokenID string
}

// Holding is the key of the holding the transfer moves (HoldingKey).
func (t TokenTransfer) Holding() string { return HoldingKey(t.Asset, t.Contract, t.TokenID) }

// Receipt is what the fetcher keeps of a transaction receipt.
type Receipt struct {
	TxHash string
	Status string // StatusSuccess or StatusFailed
	Fee    Amount // wei: FeeParts added up
	// FeeParts are the fee's components as the receipt says them.
	FeeParts FeeParts
	// GasUsed and EffectiveGasPrice (wei) as the node says.
	GasUsed           uint64
	EffectiveGasPrice Amount
	// CumulativeGasUsed is the block's gas used up to and with it.
	CumulativeGasUsed uint64
}

// Tracer is a Source that can also list the internal movements of value
// in a block's transactions, from a trace API. The fetcher probes for it
// (Probe) at start and uses it when the node answers.
type Tracer interface {
	// ProbeTraces reports which trace API the node serves ("" when none):
	// TraceCallTracer (geth's debug_traceBlockByNumber callTracer) or
	// TraceParity (trace_block: Erigon, Nethermind, Reth).
	ProbeTraces(ctx context.Context) (string, error)
	// Traces returns the movements of value inside each transaction of
	// block b, below the top-level call (which the transaction itself
	// carries), in call order. Calls that reverted, and those under
	// them, are listed with an Error, moving nothing; a failed
	// transaction's top-level call is listed too (CallPath "", its
	// revert reason as Error). Errors: ErrNotFound when the block traced
	// is no longer b (a reorg), ErrUnavailable when the node fails or
	// times out.
	Traces(ctx context.Context, b SourceBlock, api string) ([]InternalMove, error)
}

// Trace APIs a Tracer may find.
const (
	TraceCallTracer = "debug_traceBlockByNumber"
	TraceParity     = "trace_block"
)

// InternalMove is a movement of value inside a transaction: a CALL,
// CALLCODE, CREATE, CREATE2 with value, or a SELFDESTRUCT; or the
// top-level call of a failed transaction (CallPath "", Error its revert
// reason).
type InternalMove struct {
	TxHash string
	Kind   string // KindInternal, KindCreation, KindSelfdestruct or KindBurn
	From   string
	To     string // the created contract for KindCreation
	Amount Amount // wei; may be zero for a creation
	// CallType is the frame's type (CALL, CALLCODE, CREATE, CREATE2,
	// SELFDESTRUCT), CallPath its place in the call tree (Transfer).
	CallType string
	CallPath string
	// Error is the EVM's error when the call reverted, or one above it
	// did: it moved nothing. For a failed transaction's top-level call,
	// the decoded revert reason (Transaction.RevertReason).
	Error string
}

// TokenInfo is a Source that tells a token's symbol, name and decimals.
type TokenInfo interface {
	// Token returns the symbol, name and decimals of the token at
	// contract, read once and cached; "" and 0 when the contract does
	// not say. For contract "" it returns the chain's coin's.
	Token(ctx context.Context, contract string) (TokenMeta, error)
}

// TokenMeta is what a token contract says of itself.
type TokenMeta struct {
	Symbol   string
	Name     string
	Decimals int
}

// BalanceQuery asks for the balance of one asset of an address: the
// native one when Contract is "", else the token of the holding key
// Contract (an ERC-20 or ERC-721 contract: balanceOf(address); an
// ERC-1155 contract/id: balanceOf(address, id)).
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
