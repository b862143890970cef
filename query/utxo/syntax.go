package utxo

import (
	"fmt"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// Syntax is how a network spells its addresses (ParseAddress: base58check
// as written, case kept; bech32 in lower case) and its transaction ids
// (ParseTxID).
type Syntax struct{ Network *Network }

var (
	_ chain.Syntax   = Syntax{}
	_ chain.Maturing = Syntax{}
)

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

var _ chain.Deriver = Syntax{}

// ParseDescriptor returns the canonical form of a ranged descriptor of
// s.Network (a wallet's). Errors wrap ErrInvalidDescriptor.
func (s Syntax) ParseDescriptor(d string) (string, error) {
	p, err := ParseDescriptor(s.Network, d)
	if err != nil {
		return "", err
	}
	if !p.Ranged {
		return "", fmt.Errorf("descriptor %q: a wallet's descriptor derives addresses: its key ends in /* (as .../0/* for receiving, .../1/* for change): %w", clip(d), ErrInvalidDescriptor)
	}
	return p.String, nil
}

// Derive returns the addresses at indexes from to to-1 of descriptor d.
// Errors wrap ErrInvalidDescriptor.
func (s Syntax) Derive(d string, from, to uint32) ([]string, error) {
	p, err := ParseDescriptor(s.Network, d)
	if err != nil {
		return nil, err
	}
	as, err := p.DeriveRange(from, to)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String
	}
	return out, nil
}

// GapLimit checks a gap limit (CheckGapLimit); 0 is DefaultGapLimit.
func (Syntax) GapLimit(n int) (int, error) {
	if n == 0 {
		return DefaultGapLimit, nil
	}
	return n, CheckGapLimit(n)
}

// Maturity says that a coinbase output needs CoinbaseMaturity
// confirmations (chain.Maturing).
func (Syntax) Maturity() map[string]uint64 {
	return map[string]uint64{query.KindCoinbase: CoinbaseMaturity}
}

// MovementsOnly reports that a UTXO chain's balances are the outputs
// paid and not spent (chain.Ledger): an address holds nothing before its
// first payment, so a start height (a birth height) means something.
func (Syntax) MovementsOnly() bool { return true }
