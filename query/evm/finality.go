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
	h, err := s.eth.HeaderByNumber(ctx, big.NewInt(int64(rpc.FinalizedBlockNumber)))
	var rerr rpc.Error
	switch {
	case errors.Is(err, ethereum.NotFound), errors.As(err, &rerr) && ctx.Err() == nil:
		return 0, fmt.Errorf("eth_getBlockByNumber finalized: %w", query.ErrNotFound)
	case err != nil:
		return 0, s.unavailable(ctx, "eth_getBlockByNumber finalized", err)
	case !h.Number.IsUint64():
		return 0, fmt.Errorf("eth_getBlockByNumber finalized: number %s does not fit 64 bits", h.Number)
	}
	return h.Number.Uint64(), nil
}
