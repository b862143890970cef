package chain

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/wharfhq/wharf/query"
)

// ErrNotImplemented: the family, or the node behind a chain, cannot do
// what was asked (balances at a block on a UTXO chain, traces on a node
// without a trace API). Compare with errors.Is.
var ErrNotImplemented = errors.New("not implemented by this chain family")

// Family is a chain family: the rules a set of chains shares and how to
// reach one of them. How its chains spell addresses and transaction
// hashes is each chain's Syntax.
type Family interface {
	// Name is the family's name in configuration and messages ("evm").
	Name() string
	// Namespace is the CAIP-2 namespace of its chains ("eip155",
	// "bip122"): every ChainID its readers return starts with it and ':'.
	Namespace() string
	// Dial connects to the node at url. Errors: query.ErrUnavailable
	// when it cannot be reached; any other error is a bad url.
	Dial(ctx context.Context, url string) (Reader, error)
}

// Reader reads one chain from a node: what the core needs of every chain.
type Reader interface {
	// ChainID returns the chain's CAIP-2 identity ("eip155:1",
	// "bip122:000000000019d6689c085ae165831e93"), which stays the same
	// for as long as the node serves the same chain.
	ChainID(ctx context.Context) (string, error)
	// Head returns the number of the node's newest block.
	Head(ctx context.Context) (uint64, error)
	// Headers returns the headers of the blocks numbered from to to
	// (inclusive), in order, each the parent of the next. It returns
	// fewer when the node does not have them (yet), never a gap, and
	// none when it has not from.
	Headers(ctx context.Context, from, to uint64) ([]query.Block, error)
	// Activity returns, for the blocks numbered q.From to q.To, what
	// touched the addresses of q.Tracked: one BlockActivity a block, in
	// order, each the parent of the next. It returns fewer when the node
	// does not have them, or when a block changed while it read (a
	// reorg): the blocks before the first one replaced, which a second
	// call reads anew. It never lists an untracked address's Move.
	Activity(ctx context.Context, q Query) ([]BlockActivity, error)
}

// Query asks for the activity of a block range.
type Query struct {
	From, To uint64
	// Tracked is the set of addresses whose activity is wanted, in the
	// family's canonical form; Activity reads it only.
	Tracked map[string]bool
	// Pass names the caller's pass over the chain ("head", "backfill"):
	// a family that adapts how it reads to what it found (the EVM's
	// dense and sparse modes) keeps what it learned per pass.
	Pass string
	// NoInternals asks for no movements inside transactions, even where
	// the Reader reads them (chain.Internals): a node that no longer
	// keeps the state of old blocks cannot trace them.
	NoInternals bool
}

// BlockActivity is what touched the tracked addresses in one block.
type BlockActivity struct {
	Block query.Block
	// Txs are the block's transactions that touch a tracked address, in
	// block order.
	Txs []Tx
	// Moves are the movements of the tracked addresses' balances in the
	// block, in chain order: every one, so that a tracked address's
	// balance after the block is its balance before plus its Moves.
	Moves []Move
	// Touched are the tracked addresses the block touches, moved or not
	// (a party of a transaction, a withdrawal's or a fee's recipient),
	// without duplicates: the core checks their balances where the
	// family reads them. nil: the addresses of Txs and Moves.
	Touched []string
}

// Tx is a transaction in the chain-neutral form the core stores and
// serves; what only its family knows of it is in Detail.
type Tx struct {
	Hash   string // in the family's canonical form
	Index  uint   // its position in the block
	Status string // query.StatusSuccess or query.StatusFailed
	// Payer is the one address that paid Fee; "" when no single address
	// did (a UTXO transaction funded by several).
	Payer string
	Fee   query.Amount // in the native coin's smallest unit
	// Parties is every address the transaction touches, tracked or not,
	// without duplicates, in the order the family lists them.
	Parties []string
	// Transfers are the movements of assets in it, for its listing.
	Transfers []Transfer
	// Detail is the family's document of the transaction (the EVM's gas,
	// nonce, input and call tree; a UTXO's inputs and outputs): JSON the
	// store keeps and the API embeds, which the core never reads.
	Detail json.RawMessage
	// Account, when set, is the transaction as the store keeps it for a
	// chain of the account model: query.Transaction still holds its
	// sender, recipient, value, fee parts and mint, and its transfers'
	// log indexes and call paths, which the fields above do not. The
	// core stores it as it is; nil: a transaction made of the fields
	// above.
	Account *query.Transaction
}

// Transfer is a movement of one asset from one party to another inside a
// transaction.
type Transfer struct {
	Asset   string // query.AssetNative or a token asset
	Holding string // "" for the native coin, else the holding key (query.HoldingKey)
	From    string // "" when it comes from no address (minted)
	To      string // "" when it goes to none (burnt)
	Amount  query.Amount
	Kind    string // a query.Kind constant
	// Ref is the transfer's place in the transaction, in the family's
	// terms (a log index, a call path, an output index).
	Ref string
	// Position is its place in the transaction as the store keys it and
	// the API writes it (query.Transfer.Position): distinct for each
	// transfer of a transaction.
	Position int
	// Error says why the transfer moved nothing (a reverted call); it is
	// listed for the record only.
	Error string
}

// Move is one movement of a tracked address's balance of one asset.
type Move struct {
	Address string
	Asset   string // query.AssetNative or a token asset
	Holding string // "" for the native coin, else the holding key
	Kind    string // a query.Kind constant
	// Tx is the hash of the transaction that caused it; "" for one of the
	// block itself (a withdrawal, fee income, a block reward).
	Tx string
	// Ref names the cause within the transaction or block in the
	// family's terms: a log index, a call path, a withdrawal
	// (query.WithdrawalRef), an outpoint. The core stores and compares
	// it, never parses it (the API reads a withdrawal's index from it).
	Ref    string
	Amount query.Amount // signed: negative when the balance falls
	// Fee is the components of a fee split beyond execution, which the
	// store keeps beside Ref (query.Cause's); nil otherwise.
	Fee *query.FeeParts
}
