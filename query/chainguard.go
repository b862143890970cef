package query

import (
	"context"
	"errors"
	"time"
)

// ErrChainStopped: a chain's fetching is stopped rather than delete its
// history (a reorg deeper than the bound), until an operator resumes or
// rewinds it.
var ErrChainStopped = errors.New("chain stopped")

// ChainIdentity tells one chain from another: its CAIP-2 chain ID
// (chainid.go) and the hash of its block 0, which two chains of one ID
// (every EVM dev chain is eip155:1337) do not share.
type ChainIdentity struct {
	ID      string // CAIP-2: "eip155:1"
	Genesis string // the family's block hash; "" when not known
}

// ChainStop is a chain whose fetching stopped, and the operator's orders
// for it.
type ChainStop struct {
	// Reason says why fetching stopped; "" when it goes on.
	Reason string
	// Since is when it stopped, by the database's clock.
	Since time.Time
	// Accept says the operator resumed the chain: the next reorg is
	// applied whatever its depth, once.
	Accept bool
	// RewindTo is the block the operator asked the chain rewound to; -1
	// for none.
	RewindTo int64
}

// Stopped reports whether fetching is stopped.
func (s ChainStop) Stopped() bool { return s.Reason != "" }

// ChainGuard keeps what protects a chain's history: its identity as first
// fetched, and its stops.
type ChainGuard interface {
	// RecordChainIdentity records id for chain unless one is recorded
	// already (a genesis recorded when it was not known yet), and
	// returns the recorded one.
	RecordChainIdentity(ctx context.Context, chain string, id ChainIdentity) (ChainIdentity, error)
	// StopChain stops chain's fetching, saying why.
	StopChain(ctx context.Context, chain, reason string) error
	// ChainStop returns chain's stop; its zero value (RewindTo -1) when
	// none was ever recorded.
	ChainStop(ctx context.Context, chain string) (ChainStop, error)
	// ResumeChain is the operator's: fetching goes on, and the reorg it
	// stopped at is accepted. Errors: ErrNotFound when chain is not
	// stopped.
	ResumeChain(ctx context.Context, chain string) error
	// RewindChain is the operator's: fetching goes on from block to,
	// every block above it fetched again.
	RewindChain(ctx context.Context, chain string, to uint64) error
	// DoneChainOrders records that the leader carried out the operator's
	// orders: the accepted reorg (accepted) or the rewind to block
	// rewound (-1: none).
	DoneChainOrders(ctx context.Context, chain string, accepted bool, rewound int64) error
}

// Finalizer is a Source that can say which block the node holds final
// (the finalized tag): no reorg goes below it; and which it holds safe.
type Finalizer interface {
	// Finalized returns the number of the node's finalized block.
	// Errors: ErrNotFound when the node has none (before the first).
	Finalized(ctx context.Context) (uint64, error)
	// Safe returns the number of the node's safe block (the safe tag).
	// Errors: ErrNotFound when the node has none.
	Safe(ctx context.Context) (uint64, error)
}
