package chain

import "strings"

// Syntax is how a chain spells its addresses and transaction hashes: what
// a user writes is read through it and kept in its canonical form, which
// is what a family's Reader returns (never lower-casing what is
// case-sensitive: base58 is). A family's chains may differ in it (a UTXO
// network's address prefixes), so a Syntax is a chain's, not a family's.
type Syntax interface {
	// ParseAddress returns the address s in its canonical form. Errors:
	// one whose text says what is wrong, for the user who wrote s (Quote
	// writes s in it).
	ParseAddress(s string) (string, error)
	// ParseTxHash returns the transaction hash s in its canonical form.
	// Errors: as ParseAddress.
	ParseTxHash(s string) (string, error)
}

// Quote quotes user input for an error message, cut to a readable length
// and made valid UTF-8: how every family and the API write what a user
// wrote.
func Quote(s string) string {
	const n = 80
	if len(s) > n {
		return "'" + strings.ToValidUTF8(s[:n], "") + "…'"
	}
	return "'" + strings.ToValidUTF8(s, "\uFFFD") + "'"
}

// Maturing is a Syntax of a chain some of whose outputs cannot be spent
// at once (a UTXO chain's coinbase outputs): the API splits its balances
// into what is spendable and what is still immature by it.
type Maturing interface {
	// Maturity returns the kinds of causes (query.KindCoinbase, say)
	// whose outputs need confirmations before a transaction of the next
	// block may spend them, with how many each needs.
	Maturity() map[string]uint64
}
