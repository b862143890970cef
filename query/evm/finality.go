package evm

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/wharfhq/wharf/query"
)

var _ query.Finalizer = (*Source)(nil)

// Finalized returns the number of the node's finalized block (the
// finalized tag). Errors: query.ErrNotFound when the node has none yet,
// or knows no such tag (before the merge, or a chain without finality).
func (s *Source) Finalized(ctx context.Context) (uint64, error) {
	return s.tagged(ctx, rpc.FinalizedBlockNumber)
}

// Safe returns the number of the node's safe block (the safe tag).
// Errors: query.ErrNotFound as Finalized.
func (s *Source) Safe(ctx context.Context) (uint64, error) {
	return s.tagged(ctx, rpc.SafeBlockNumber)
}

// tagged returns the number of the node's block of tag.
func (s *Source) tagged(ctx context.Context, tag rpc.BlockNumber) (uint64, error) {
	op := "eth_getBlockByNumber " + tag.String()
	h, err := s.eth.HeaderByNumber(ctx, big.NewInt(int64(tag)))
	var rerr rpc.Error
	switch {
	case errors.Is(err, ethereum.NotFound), errors.As(err, &rerr) && ctx.Err() == nil:
		return 0, fmt.Errorf("%s: %w", op, query.ErrNotFound)
	case err != nil:
		return 0, s.unavailable(ctx, op, err)
	case !h.Number.IsUint64():
		return 0, fmt.Errorf("%s: number %s does not fit 64 bits", op, h.Number)
	}
	return h.Number.Uint64(), nil
}
