package evm

import (
	"context"
	"errors"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

var _ chain.HistoryReach = (*Reader)(nil)

// FullHistory reports whether the node keeps the state of the block after
// the genesis (an archive node), which the bisection of History needs back
// to the genesis: one eth_getBalance of the zero address there. A Source
// that reads no state (no query.StateSource) has none.
func (r *Reader) FullHistory(ctx context.Context) (bool, error) {
	ss, ok := r.src.(query.StateSource)
	if !ok {
		return false, nil
	}
	_, err := ss.States(ctx, 1, []string{ZeroAddress}, false)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, query.ErrNoState):
		return false, nil
	}
	return false, err
}
