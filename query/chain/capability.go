package chain

import (
	"context"

	"github.com/wharfhq/wharf/query"
)

// The optional capabilities of a Reader, probed by type assertion: the
// core runs what needs one only where the Reader has it.

// BalanceReader is a Reader whose node tells an address's balance at a
// block: the core checks a statement against it, locates where a wrong
// one went wrong and refreshes balances on a schedule. An account chain
// tells it at any block it keeps the state of; a UTXO node, as the sum of
// an address's unspent outputs, at its tip only. Without one a
// statement is the sum of the movements Activity lists, never checked.
type BalanceReader interface {
	// Balances reads the balances asked for at block, in the order of
	// the queries (a token's symbol and decimals read once). Errors:
	// query.ErrNoState when the node no longer keeps the state of block
	// (a pruned account node: the core waits or reads a newer block);
	// ErrNotImplemented when the Reader cannot tell balances at block at
	// all (a UTXO node's below its tip): no check is made there.
	Balances(ctx context.Context, block uint64, queries []query.BalanceQuery) ([]query.Balance, error)
}

// CostlyBalances is a BalanceReader whose every reading is a scan of the
// node's state rather than a lookup (Bitcoin Core's scan of its whole set
// of unspent outputs: minutes on Bitcoin's mainnet). The head follower
// then checks the statements of the addresses new blocks touched at most
// once every Config.RefreshInterval instead of after every chunk of
// blocks: the check reads every address touched since the one before,
// and the rows in between say they were not checked.
type CostlyBalances interface {
	BalanceReader
	// BalancesCostly reports whether a reading of balances costs such a
	// scan (a family whose dialects differ tells them apart here).
	BalancesCostly() bool
}

// HistorySource is a Reader that can find where an address moved without
// reading every block: how a subscriber arriving late gets the address's
// past (the EVM's bisection over archive state; a UTXO node's address
// index).
type HistorySource interface {
	// History returns the numbers of the blocks from to to (inclusive)
	// in which address may have moved, ascending: the core reads their
	// Activity. A block listed with nothing for it costs a read; a block
	// left out loses its movements. Errors: ErrNotImplemented when the
	// node cannot answer for that range (not an archive node).
	History(ctx context.Context, address string, from, to uint64) ([]uint64, error)
}

// HistoryReach is a HistorySource that tells, without a search, whether
// its History answers for the chain's oldest blocks (an EVM archive node
// keeps their state, a pruned one does not): whether a late subscriber's
// whole history can be read, asked once before it is. Without it the core
// asks History for the block after the genesis.
type HistoryReach interface {
	// FullHistory reports whether History answers back to the genesis.
	// Errors: query.ErrUnavailable when the node cannot be asked.
	FullHistory(ctx context.Context) (bool, error)
}

// Ledger is a Reader of a chain whose balances are nothing but the
// movements Activity lists (a UTXO chain: an address holds the outputs
// paid to it and not spent; nothing is allocated at the genesis, nothing
// moves outside the blocks): an address holds nothing before the first
// block that moved it. A late subscriber's statement then chains from
// zero where its history starts, when nothing of the address lies
// below: the genesis, a start height the subscriber gives (the birth
// height of a wallet), or a block before which the history source finds
// nothing of it.
type Ledger interface {
	// MovementsOnly reports whether every balance is the sum of its
	// movements.
	MovementsOnly() bool
}

// Internals is a Reader that can also list the movements inside
// transactions (an EVM node's trace API): Activity lists them once
// UseInternals chose a source.
type Internals interface {
	// ProbeInternals reports which source of internal movements the node
	// serves, in the family's terms (an EVM trace API's method). Errors:
	// one wrapping ErrNotImplemented, saying in the family's terms what
	// the node lacks, when it serves none (the core says it to the
	// operator); query.ErrUnavailable when the node cannot be asked.
	ProbeInternals(ctx context.Context) (string, error)
	// UseInternals makes Activity read internal movements from source
	// (one ProbeInternals returned), or none with "".
	UseInternals(source string)
}

// InternalsError is how Activity fails when reading the internal
// movements failed (a node's trace call): the core counts those apart.
type InternalsError struct{ Err error }

func (e *InternalsError) Error() string { return e.Err.Error() }

// Unwrap returns the error of the read.
func (e *InternalsError) Unwrap() error { return e.Err }

// TokenReader is a Reader that tells what a token says of itself.
type TokenReader interface {
	// Token returns the symbol, name and decimals of the token of
	// holding (a holding key), read once and cached; "" and 0 when it
	// does not say. For "" it returns the chain's coin's.
	Token(ctx context.Context, holding string) (query.TokenMeta, error)
}

// A Reader that knows which block the chain holds final implements
// query.Finalizer: no reorg goes below it.

// HistoryBatcher is a HistorySource that searches the histories of
// several addresses together, sharing its reads (the EVM's logs by
// address and its bisection's round trips): the core asks it for all the
// addresses it backfills at once.
type HistoryBatcher interface {
	// Histories returns the numbers of the blocks from to to (inclusive)
	// in which one of addresses may have moved, ascending, as History
	// does for one. Errors as History's.
	Histories(ctx context.Context, addresses []string, from, to uint64) ([]uint64, error)
}
