// Package eth is query.Source on an Ethereum node's JSON-RPC interface
// (go-ethereum's rpc and ethclient, with batched calls). The in-process
// dev chain is query/eth/devchain.
package eth
