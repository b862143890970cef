// Package chain is the seam between addrd's chain-neutral core (the
// fetcher, the store, the API) and a chain family: the EVM (query/evm),
// later the UTXO chains (query/utxo).
//
// A family is a union of small interfaces, as a go-ethereum client is the
// union of the readers of its ethereum package:
//
//   - Family: its name and CAIP-2 namespace, and how to dial a chain of
//     it (Dial returns a Reader);
//   - Reader: the chain's identity, its head, headers for the fork search,
//     and the Activity of a block range for a set of tracked addresses:
//     chain-neutral transactions (Tx, with the family's own fields in an
//     opaque Detail document) and the movements of the tracked addresses'
//     balances (Move), each with a cause whose Ref only the family reads.
//     A family reads a range at a time, so how it reads (the EVM's one
//     pass per block, its dense and sparse modes) stays inside it.
//
// What only some chains can do is an optional interface the core probes
// by type assertion, as a River driver's capabilities are: BalanceReader
// (balances at a block: account chains, where the core checks, locates
// and refreshes a statement), HistorySource (the blocks where a late
// subscriber's address moved: the EVM's state bisection, a UTXO node's
// address index), Internals (movements inside transactions, an EVM trace
// API), TokenReader (a token's symbol, name and decimals) and
// query.Finalizer (the chain's final block). A method a backend cannot
// serve returns an error wrapping ErrNotImplemented.
//
// Errors otherwise are the query package's: query.ErrUnavailable when the
// node cannot answer now (the core retries), query.ErrNotFound when a
// block asked for is no longer canonical.
//
// chaintest holds the contract every family passes and a fake family in
// pure Go that passes it, on which the core's tests run without a node.
package chain
