package query

import "context"

// A block's finality, as rows, transactions and events tell it: how sure
// it is to stay on the chain (docs/fetcher.md).
const (
	// FinalityLatest: stored, but a reorg may still remove it.
	FinalityLatest = "latest"
	// FinalitySafe: the node's safe tag covers it (where the node has
	// none, it has --confirmations blocks on it).
	FinalitySafe = "safe"
	// FinalityFinalized: the node's finalized tag covers it (where the
	// node has none, it is deeper than the deepest reorg the fetcher
	// applies): no reorg removes it without an operator's rewind.
	FinalityFinalized = "finalized"
)

// Sources of a chain's finality.
const (
	// FinalityByNode: the node's safe and finalized tags.
	FinalityByNode = "node"
	// FinalityByDepth: the node has no such tags; the depths addrd
	// applies stand in (--confirmations for safe, --max-reorg-depth for
	// finalized).
	FinalityByDepth = "confirmations"
)

// Finality is how much of a chain's stored history is safe and final:
// the newest stored block that is safe, and the newest that is
// finalized (Safe >= Finalized). Block 0, the genesis, is final.
type Finality struct {
	Safe, Finalized uint64
	// Source is FinalityByNode or FinalityByDepth; "" when no mark was
	// ever set.
	Source string
}

// Of is the finality of a block of number n.
func (f Finality) Of(n uint64) string {
	switch {
	case n <= f.Finalized:
		return FinalityFinalized
	case n <= f.Safe:
		return FinalitySafe
	}
	return FinalityLatest
}

// FinalityStore keeps each chain's finality marks.
type FinalityStore interface {
	// SetFinality moves chain's marks up to f, each capped at the stored
	// checkpoint (a block not stored yet is nobody's row) and never moved
	// down (only a rewind lowers them), and writes a finalized event for
	// every address with statement rows in the blocks that became final,
	// in the same transaction.
	SetFinality(ctx context.Context, chain string, f Finality) error
	// Finality returns chain's marks: the zero Finality when none was set.
	Finality(ctx context.Context, chain string) (Finality, error)
}
