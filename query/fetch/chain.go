package fetch

// Checking the chain: the node serves the chain ID recorded for the name, and its native coin.

import (
	"context"
	"errors"
	"fmt"

	"github.com/wharfhq/wharf/query"
)

// ErrChainMismatch: the node behind a chain name serves another chain ID
// than the one recorded for that name.
var ErrChainMismatch = errors.New("chain ID mismatch")

// networkName names a chain ID for messages.
func networkName(id uint64) string {
	if n, ok := query.KnownNetwork(id); ok {
		return fmt.Sprintf("%d (%s)", id, n.Name)
	}
	return fmt.Sprint(id)
}

// CheckChain asks the node its chain ID, records it for the chain name
// on first start, and refuses a node of another chain ID than recorded
// (a mainnet database pointed at a testnet node must never mix data). It
// also settles the native coin: Config.Native, else the table's.
// Every step runs it until it succeeds once. Errors: ErrChainMismatch,
// ErrUnavailable, and an unknown chain ID without a native coin given.
func (f *Fetcher) CheckChain(ctx context.Context) error { return f.follow.checkChain(ctx) }

// checkChain is CheckChain.
func (f *follower) checkChain(ctx context.Context) error {
	if f.checked {
		return nil
	}
	id, err := f.cfg.Source.ChainID(ctx)
	if err != nil {
		return f.nodeErr(fmt.Errorf("chain %s: asking the node its chain ID: %w", f.cfg.Chain, err))
	}
	native := f.cfg.Native
	if native.Symbol == "" {
		n, ok := query.KnownNetwork(id)
		if !ok {
			return fmt.Errorf("chain %s: the node serves chain ID %d, which is not in addrd's table of networks: give its native coin on the flag, --chain %s:SYMBOL:DECIMALS=RPC_URL", f.cfg.Chain, id, f.cfg.Chain)
		}
		native = n.Native
	}
	recorded, err := f.cfg.Store.RecordChainID(ctx, f.cfg.Chain, id)
	if err != nil {
		return err
	}
	if recorded != id {
		return fmt.Errorf("chain %s: the node serves chain ID %s but this database holds chain ID %s under that name: refusing to fetch; point --chain %s at a node of chain ID %d, or use another name or database: %w",
			f.cfg.Chain, networkName(id), networkName(recorded), f.cfg.Chain, recorded, ErrChainMismatch)
	}
	f.facts.native = native
	f.checked = true
	f.log.Info("fetcher: chain", "chain_id", id, "native", native.Symbol, "decimals", native.Decimals)
	return nil
}
