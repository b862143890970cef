// Package eth is query.Source on an Ethereum node's JSON-RPC interface
// (go-ethereum's rpc and ethclient, with batched calls), and Dev, an
// in-process chain from go-ethereum's simulated backend served over real
// HTTP JSON-RPC, for addrd serve --dev and for tests.
package eth
