// Package utxo is the UTXO chain family: Bitcoin and Litecoin networks,
// their addresses (P2PKH, P2SH, P2WPKH, P2WSH, P2TR) and transaction ids,
// output descriptors (BIP 380-386) and the addresses they derive, the
// JSON-RPC clients of btcd's and Bitcoin Core's dialects, and the reader
// of a block range's movements for a set of tracked addresses.
//
// Amounts are integers of the coin's smallest unit (10^-8 BTC, LTC). An
// output credits the address its script pays to when the script is one
// of the five address templates; OP_RETURN, bare multisig, pay-to-pubkey
// and non-standard outputs credit no one.
package utxo
