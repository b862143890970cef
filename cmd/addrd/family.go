package main

// The chain families serve reads: a --chain name in the UTXO rows of the
// table of networks (BTC, LTC, BTCREGTEST...) is the UTXO family's chain
// of that network, every other name an EVM chain's.

import (
	"context"
	"fmt"

	"github.com/wharfhq/wharf/query"
	seam "github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/utxo"
)

// utxoNetwork is the network of a UTXO chain; nil for an EVM chain.
func (c chain) utxoNetwork() (*utxo.Network, error) {
	if c.Family != query.FamilyUTXO {
		return nil, nil
	}
	n, err := utxo.NetworkByID(c.Network.ID)
	if err != nil {
		return nil, fmt.Errorf("chain %s: %w", c.Name, err)
	}
	return n, nil
}

// syntaxOf is how chain c spells addresses and transaction hashes: its
// UTXO network's prefixes, or the EVM's hex.
func syntaxOf(c chain) (seam.Syntax, error) {
	n, err := c.utxoNetwork()
	if err != nil {
		return nil, err
	}
	if n != nil {
		return utxo.Syntax{Network: n}, nil
	}
	return evm.Syntax{}, nil
}

// dialed is a chain's Reader and how to close it.
type dialed struct {
	reader seam.Reader
	close  func()
}

// dialChain connects to chain c's node. A UTXO chain's Reader asks the
// node nothing yet: the fetcher checks its network (a BTC name on a
// regtest node is refused) when it checks the chain.
func dialChain(ctx context.Context, c chain) (dialed, error) {
	n, err := c.utxoNetwork()
	if err != nil {
		return dialed{}, err
	}
	if n != nil {
		r, err := utxo.Open(c.RPC, n)
		if err != nil {
			return dialed{}, fmt.Errorf("chain %s: %w", c.Name, err)
		}
		return dialed{reader: r, close: r.Close}, nil
	}
	src, err := evm.Dial(ctx, c.RPC, evm.SourceConfig{})
	if err != nil {
		return dialed{}, err
	}
	return dialed{reader: evm.NewReader(src), close: src.Close}, nil
}
