package utxo

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/wharfhq/wharf/query/chain"
)

var (
	_ chain.HistorySource  = (*Reader)(nil)
	_ chain.HistoryBatcher = (*Reader)(nil)
	_ chain.HistoryReach   = (*Reader)(nil)
	_ chain.Ledger         = (*Reader)(nil)
)

// historyPage is how many transactions one searchrawtransactions call
// reads.
const historyPage = 500

// History returns the blocks from to to in which address received or
// spent, from btcd's address index (searchrawtransactions, --addrindex):
// one call per 500 of the address's transactions and one header read a
// block. Errors: chain.ErrNotImplemented on a node of Core's dialect,
// which keeps no address index (a late subscriber's past is then a scan
// from a height it gives), or on a btcd without --addrindex.
func (r *Reader) History(ctx context.Context, addr string, from, to uint64) ([]uint64, error) {
	return r.Histories(ctx, []string{addr}, from, to)
}

// Histories returns the blocks from to to in which one of addresses
// received or spent, as History does for one: each address's
// transactions from the address index, each block's header read once for
// them all. Errors as History's.
func (r *Reader) Histories(ctx context.Context, addrs []string, from, to uint64) ([]uint64, error) {
	d, err := r.dialectOf(ctx)
	if err != nil {
		return nil, err
	}
	if d != DialectBtcd {
		return nil, fmt.Errorf("history of %d addresses: Bitcoin Core keeps no address index: %w", len(addrs), chain.ErrNotImplemented)
	}
	heights := map[string]uint64{}
	var out []uint64
	for _, addr := range addrs {
		if _, err := ParseAddress(r.net, addr); err != nil {
			return nil, err
		}
		for skip := 0; ; skip += historyPage {
			var txs []struct {
				BlockHash string `json:"blockhash"`
			}
			err := r.rpc.call(ctx, &txs, "searchrawtransactions", addr, 1, skip, historyPage, 0)
			var re *rpcError
			if errors.As(err, &re) && re.Code == -5 { // no transactions for the address
				break
			}
			if errors.As(err, &re) && re.Code == -1 { // no address index
				return nil, fmt.Errorf("history of %s: %w (run btcd with --addrindex): %w", addr, err, chain.ErrNotImplemented)
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
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// FullHistory reports whether History answers back to the genesis: on a
// btcd with its address index, which indexes every block; never on Core.
// It asks the index once for an address that nothing pays.
func (r *Reader) FullHistory(ctx context.Context) (bool, error) {
	d, err := r.dialectOf(ctx)
	if err != nil {
		return false, err
	}
	if d != DialectBtcd {
		return false, nil
	}
	// The P2WPKH address of the hash 0.
	nobody, err := AddressFromScript(r.net, append([]byte{0, 20}, make([]byte, 20)...))
	if err != nil {
		return false, err
	}
	var txs []any
	err = r.rpc.call(ctx, &txs, "searchrawtransactions", nobody.String, 0, 0, 1, 0)
	var re *rpcError
	switch {
	case err == nil, errors.As(err, &re) && re.Code == -5: // none for the address
		return true, nil
	case errors.As(err, &re) && re.Code == -1: // no address index
		return false, nil
	}
	return false, err
}

// MovementsOnly reports that an address's balance is what its movements
// add up to: the outputs paid to it and not spent. No block before its
// first payment holds anything of it (the genesis's output is
// unspendable and pays no address a subscriber tracks).
func (r *Reader) MovementsOnly() bool { return true }
