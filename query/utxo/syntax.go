package utxo

import "github.com/wharfhq/wharf/query/chain"

// Syntax is how a network spells its addresses (ParseAddress: base58check
// as written, case kept; bech32 in lower case) and its transaction ids
// (ParseTxID).
type Syntax struct{ Network *Network }

var _ chain.Syntax = Syntax{}

// ParseAddress returns the canonical form of an address of s.Network.
// Errors wrap ErrInvalidAddress.
func (s Syntax) ParseAddress(a string) (string, error) {
	addr, err := ParseAddress(s.Network, a)
	if err != nil {
		return "", err
	}
	return addr.String, nil
}

// ParseTxHash returns the canonical form of a transaction id. Errors wrap
// ErrInvalidTxID.
func (Syntax) ParseTxHash(h string) (string, error) { return ParseTxID(h) }
