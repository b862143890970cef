// Package evm is query.Source on an Ethereum node's JSON-RPC interface
// (go-ethereum's rpc and ethclient, with batched calls). The in-process
// dev chain is query/evm/devchain.
package evm
