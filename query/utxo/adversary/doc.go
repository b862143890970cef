// Package adversary drives a real UTXO node in regtest with seeded random
// activity (payments to many outputs, consolidations, change, dust,
// OP_RETURN, spends of outputs made in the same block, coinbase spends,
// RBF replacements, reorgs through invalidateblock and reconsiderblock)
// from a descriptor wallet's keys (P2WPKH, P2PKH, P2TR, 2-of-3 P2WSH),
// and holds what the utxo reader says of each tracked address to what the
// node says: its unspent outputs (scantxoutset, or btcd's address index),
// their sum, their maturity and the address's transactions. It is test
// support: the generator signs with keys it derives from its seed.
package adversary
