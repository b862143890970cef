package evm

import (
	"context"

	"github.com/wharfhq/wharf/query"
)

// ChangedBlocks is changedBlocks, for the black-box tests of the bisection.
var ChangedBlocks = changedBlocks

// ChangedBlocksKnown is changedBlocks with blocks known to hold
// something, which cut the range first.
func ChangedBlocksKnown(ctx context.Context, ss query.StateSource, from, to uint64, addresses []string, known []uint64) (map[uint64]bool, error) {
	return newStateCache(ss).changedBlocks(ctx, from, to, addresses, known)
}

// PlainBlock is plainBlock, for its table test.
var PlainBlock = plainBlock
