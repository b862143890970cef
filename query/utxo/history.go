package utxo

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/wharfhq/wharf/query/chain"
)

var _ chain.HistorySource = (*Reader)(nil)

// historyPage is how many transactions one searchrawtransactions call
// reads.
const historyPage = 500

// History returns the blocks from to to in which address received or
// spent, from btcd's address index (searchrawtransactions, --addrindex):
// one call per 500 of the address's transactions and one header read a
// block. Errors: chain.ErrNotImplemented on a node of Core's dialect,
// which keeps no address index (a late subscriber's past is then a scan
// from a height it gives).
func (r *Reader) History(ctx context.Context, addr string, from, to uint64) ([]uint64, error) {
	d, err := r.dialectOf(ctx)
	if err != nil {
		return nil, err
	}
	if d != DialectBtcd {
		return nil, fmt.Errorf("history of %s: Bitcoin Core keeps no address index: %w", addr, chain.ErrNotImplemented)
	}
	if _, err := ParseAddress(r.net, addr); err != nil {
		return nil, err
	}
	heights := map[string]uint64{}
	var out []uint64
	for skip := 0; ; skip += historyPage {
		var txs []struct {
			BlockHash string `json:"blockhash"`
		}
		err := r.rpc.call(ctx, &txs, "searchrawtransactions", addr, 1, skip, historyPage, 0)
		var re *rpcError
		if errors.As(err, &re) && re.Code == -5 { // no transactions for the address
			break
		}
		if err != nil {
			return nil, err
		}
		for _, tx := range txs {
			if tx.BlockHash == "" {
				continue // in the mempool
			}
			if _, ok := heights[tx.BlockHash]; !ok {
				var hd struct {
					Height uint64 `json:"height"`
				}
				if err := r.rpc.call(ctx, &hd, "getblockheader", tx.BlockHash, true); err != nil {
					return nil, err
				}
				h := hd.Height
				heights[tx.BlockHash] = h
				if from <= h && h <= to {
					out = append(out, h)
				}
			}
		}
		if len(txs) < historyPage {
			break
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
