// Package devchain is an in-process Ethereum chain for addrd serve --dev
// and for tests: go-ethereum's simulated backend (ethclient/simulated)
// assembled by hand so that it owns its HTTP listener, with deterministic
// demo accounts, a demo ERC-20 token and demo contracts in genesis, served
// over real HTTP JSON-RPC on loopback.
//
// It is apart from query/evm (the adapter, whose Source needs a few
// go-ethereum client packages) as go-ethereum keeps ethclient/simulated
// apart from ethclient: it pulls in the node, the chain, the miner and the
// tracers. Files by job: chain.go assembles the node and seals blocks,
// serve.go serves it, accounts.go signs and sends, producer.go is the demo
// producer, scenario.go the calls tests script a chain with,
// contracts.go and token.go the demo contracts.
package devchain
