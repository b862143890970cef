package query

import "time"

// Quarantined is a field a store was given and could not keep as it
// came: a NUL byte or invalid UTF-8 (neither database stores them as
// text), or a string from the chain longer than its bound (MaxSymbol
// …). The store keeps the rest of the block, with the field made
// ChainText, and records what it changed: a chain never stops on one
// bad field.
type Quarantined struct {
	Chain string
	Block uint64
	// TxHash is the transaction's hash for a field of a transaction or
	// of one of its transfers; Address the holder's for a balance's.
	TxHash  string
	Address string
	// Field names the field: "revert_reason", "transfers[2].symbol",
	// "balance.name".
	Field string
	// Reason says what was wrong ("NUL byte", "invalid UTF-8", "control
	// characters", "longer than 32 characters"), Length the field's
	// length in bytes as it came.
	Reason string
	Length int
	At     time.Time
}
