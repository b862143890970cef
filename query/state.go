package query

import (
	"context"
	"errors"
)

// Reading accounts at past blocks: the seams of the full-history backfill.

// ErrNoState: the node has no state for the block asked (it is not an
// archive node), so balances and nonces there cannot be read.
var ErrNoState = errors.New("no state for that block")

// StateSource is a Source that reads accounts at historical blocks, for
// the full-history backfill (BackfillAll).
type StateSource interface {
	// States returns the native balance of addresses at block and, with
	// nonces, their nonce, in the order of addresses. Errors: ErrNoState
	// when the node keeps no state for block, ErrUnavailable.
	States(ctx context.Context, block uint64, addresses []string, nonces bool) ([]AccountState, error)
}

// CodeReader is a StateSource that also tells which addresses hold code
// (are contracts) at a block: the history search cannot find every
// transaction of a contract from its state (a call without value, log or
// nonce change leaves none), so it reads the blocks for them.
type CodeReader interface {
	// HasCode reports, in the order of addresses, whether each holds
	// code at block. Errors: ErrNoState, ErrUnavailable.
	HasCode(ctx context.Context, block uint64, addresses []string) ([]bool, error)
}

// AccountState is an address's native balance and nonce at a block.
type AccountState struct {
	Balance Amount // wei
	Nonce   uint64
}

// StateRead asks for the states of Addresses at Block, with their nonces
// or without.
type StateRead struct {
	Block     uint64
	Addresses []string
	Nonces    bool
}

// StateBatcher is a StateSource that also reads states at many blocks in
// one round trip: the bisection asks each of its levels so. Without it,
// States is called for each block, a few at a time.
type StateBatcher interface {
	StateSource
	// StatesAt returns, for each read, the states of its addresses in
	// their order (the nonce zero where not asked). Errors as States.
	StatesAt(ctx context.Context, reads []StateRead) ([][]AccountState, error)
}
