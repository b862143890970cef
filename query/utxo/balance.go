package utxo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

var _ chain.CostlyBalances = (*Reader)(nil)

// BalancesCostly is true: a balance is a sum over the node's unspent
// outputs, which Bitcoin Core's dialect reads by a scan of its whole set
// (scantxoutset) and btcd's by the address's whole history
// (searchrawtransactions) and a gettxout of each output, so the core
// checks a statement against it at most once a refresh interval rather
// than at every block.
func (r *Reader) BalancesCostly() bool { return true }

// Balances reads the balances of the addresses of queries at block, which
// must be the node's tip: each is the sum of the address's unspent
// outputs by the node, which keeps its set of unspent outputs at its tip
// only. Bitcoin Core's dialect scans that set for the addresses
// (scantxoutset, one scan for them all: seconds on a small chain, a few
// minutes on Bitcoin's mainnet); btcd's lists each address's transactions
// from its address index (searchrawtransactions) and asks which of their
// outputs paying the address are unspent (gettxout, in one batch). An
// output of the mempool counts for nothing, an output the mempool spends
// still counts. Errors: chain.ErrNotImplemented when block is not the
// tip (or the tip moved while reading), or for a token query (a UTXO
// chain has none), or on a btcd without --addrindex.
func (r *Reader) Balances(ctx context.Context, block uint64, queries []query.BalanceQuery) ([]query.Balance, error) {
	for _, q := range queries {
		if q.Contract != "" {
			return nil, fmt.Errorf("balance of token %s: a UTXO chain has no tokens: %w", q.Contract, chain.ErrNotImplemented)
		}
	}
	head, err := r.Head(ctx)
	if err != nil {
		return nil, err
	}
	if block != head {
		return nil, fmt.Errorf("balances at block %d: the node tells unspent outputs at its tip (%d) only: %w", block, head, chain.ErrNotImplemented)
	}
	var tip string
	if err := r.rpc.call(ctx, &tip, "getblockhash", block); err != nil {
		return nil, err
	}
	d, err := r.dialectOf(ctx)
	if err != nil {
		return nil, err
	}
	var addrs []string
	seen := map[string]bool{}
	for _, q := range queries {
		if !seen[q.Address] {
			seen[q.Address] = true
			addrs = append(addrs, q.Address)
		}
	}
	var sums map[string]int64
	var best string
	if d == DialectCore {
		sums, best, err = r.scanUnspent(ctx, addrs)
	} else {
		sums, best, err = r.indexedUnspent(ctx, addrs, tip)
	}
	if err != nil {
		return nil, err
	}
	if best != tip {
		return nil, fmt.Errorf("balances at block %d: the tip moved to %s while reading: %w", block, best, chain.ErrNotImplemented)
	}
	out := make([]query.Balance, len(queries))
	for i, q := range queries {
		out[i] = query.Balance{Address: q.Address, Asset: query.AssetNative, Symbol: r.net.Coin, Decimals: Decimals,
			Amount: query.AmountOf(sums[q.Address]), Block: block}
	}
	return out, nil
}

// scanUnspent sums the unspent outputs of addrs by Core's scantxoutset;
// it returns the sums and the tip the scan read.
func (r *Reader) scanUnspent(ctx context.Context, addrs []string) (map[string]int64, string, error) {
	objs := make([]string, len(addrs))
	for i, a := range addrs {
		objs[i] = "addr(" + a + ")"
	}
	var res struct {
		Success   bool   `json:"success"`
		BestBlock string `json:"bestblock"`
		Unspents  []struct {
			ScriptPubKey string      `json:"scriptPubKey"`
			Amount       json.Number `json:"amount"`
		} `json:"unspents"`
	}
	if err := r.rpc.call(ctx, &res, "scantxoutset", "start", objs); err != nil {
		var re *rpcError
		if errors.As(err, &re) && re.Code == -8 { // a scan already in progress
			return nil, "", fmt.Errorf("%w: %w", err, query.ErrUnavailable)
		}
		return nil, "", err
	}
	if !res.Success {
		return nil, "", fmt.Errorf("scantxoutset: the scan was aborted: %w", query.ErrUnavailable)
	}
	sums := map[string]int64{}
	for _, u := range res.Unspents {
		v, err := sats(u.Amount)
		if err != nil {
			return nil, "", err
		}
		sums[r.addressOf(u.ScriptPubKey)] += v
	}
	return sums, res.BestBlock, nil
}

// indexedUnspent sums the unspent outputs of addrs by btcd's address
// index and gettxout; it returns the sums and the tip gettxout read (tip
// when no output is unspent).
func (r *Reader) indexedUnspent(ctx context.Context, addrs []string, tip string) (map[string]int64, string, error) {
	var ops []Outpoint
	owner := map[Outpoint]string{}
	for _, a := range addrs {
		for skip := 0; ; skip += historyPage {
			// Only the outputs: btcd writes this result's size as a string.
			var txs []struct {
				TxID string `json:"txid"`
				Vout []struct {
					N            uint32 `json:"n"`
					ScriptPubKey struct {
						Hex string `json:"hex"`
					} `json:"scriptPubKey"`
				} `json:"vout"`
			}
			err := r.rpc.call(ctx, &txs, "searchrawtransactions", a, 1, skip, historyPage, 0)
			var re *rpcError
			if errors.As(err, &re) && re.Code == -5 { // no transactions for the address
				break
			}
			if errors.As(err, &re) && re.Code == -1 { // no address index
				return nil, "", fmt.Errorf("%w (run btcd with --addrindex): %w", err, chain.ErrNotImplemented)
			}
			if err != nil {
				return nil, "", err
			}
			for _, tx := range txs {
				for _, o := range tx.Vout {
					op := Outpoint{tx.TxID, o.N}
					if _, ok := owner[op]; !ok && r.addressOf(o.ScriptPubKey.Hex) == a {
						owner[op] = a
						ops = append(ops, op)
					}
				}
			}
			if len(txs) < historyPage {
				break
			}
		}
	}
	params := make([][]any, len(ops))
	for i, op := range ops {
		params[i] = []any{op.TxID, op.Vout, false}
	}
	results, err := r.rpc.batch(ctx, "gettxout", params)
	if err != nil {
		return nil, "", err
	}
	sums, best := map[string]int64{}, tip
	for i, raw := range results {
		var out *struct {
			BestBlock string      `json:"bestblock"`
			Value     json.Number `json:"value"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, "", fmt.Errorf("gettxout %s: %v: %w", ops[i], err, query.ErrUnavailable)
		}
		if out == nil {
			continue // spent
		}
		v, err := sats(out.Value)
		if err != nil {
			return nil, "", err
		}
		sums[owner[ops[i]]] += v
		if out.BestBlock != tip {
			best = out.BestBlock
		}
	}
	return sums, best, nil
}
