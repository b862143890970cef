package evm

import (
	"context"

	"github.com/wharfhq/wharf/query/chain"
)

// Namespace is the CAIP-2 namespace of EVM chains: an EVM chain's ID is
// "eip155:" and its EIP-155 chain ID.
const Namespace = "eip155"

// Family is the EVM chain family: chains read over an Ethereum node's
// JSON-RPC interface (addrd serve --chain NAME=RPC_URL).
type Family struct {
	// Config tunes the Source of every chain dialled.
	Config SourceConfig
}

var _ chain.Family = Family{}

// Name returns "evm".
func (Family) Name() string { return "evm" }

// Namespace returns Namespace.
func (Family) Namespace() string { return Namespace }

// Dial returns a Reader on the node's JSON-RPC endpoint url (Dial).
func (f Family) Dial(ctx context.Context, url string) (chain.Reader, error) {
	src, err := Dial(ctx, url, f.Config)
	if err != nil {
		return nil, err
	}
	return NewReader(src), nil
}
