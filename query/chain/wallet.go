package chain

// Deriver is a Syntax of a chain whose family derives addresses from
// output descriptors (a UTXO chain's wallets): the API reads a wallet's
// descriptors through it, and the wallet keeper derives the addresses it
// tracks, extending them as they get used.
type Deriver interface {
	// ParseDescriptor returns the descriptor s in its canonical form
	// (with its checksum). A wallet's descriptors are ranged (their keys
	// end in /*). Errors: one whose text names the rule s breaks.
	ParseDescriptor(s string) (string, error)
	// Derive returns the addresses at indexes from to to-1 of a
	// descriptor ParseDescriptor returned, in canonical form.
	Derive(descriptor string, from, to uint32) ([]string, error)
	// GapLimit checks a wallet's gap limit, how many consecutive unused
	// addresses are derived after its newest used one; 0 is the family's
	// default, which it returns. Errors: one naming the bounds.
	GapLimit(n int) (int, error)
}
