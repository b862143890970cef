// Package adversary drives a chain with seeded random mixes of the
// movements that break address statements, and checks what addrd made
// of them against the node alone.
//
// A Generator (scenario.go) deploys its contracts (contracts.go,
// hand-assembled EVM bytecode, asm.go) on a Chain (a real geth --dev or
// the in-process dev chain) and sends, round after round, plain and
// failed transfers, ERC-20 transfers of an honest, a fee-on-transfer, a
// rebasing and a balanceOf-less token, ERC-721 Transfers, nested
// internal calls with reverted branches, CREATE and CREATE2 with value,
// self-destructs to another address and to itself (in the creating
// transaction and later), sends to counterfactual addresses before they
// exist, withdrawals and fee income. The same seed sends the same
// transactions.
//
// A Checker (check.go) then reads the node and addrd's /v1 API and
// reports every Violation of the statement's invariants: rows chain,
// every row that says it was reconciled equals the node's balance at its
// block, every block where the node's balance changed has a row, the
// newest row equals /balances, and the transaction list is the
// transactions that touched the address in the covered range. The
// checker is the definition of "every wei accounted for".
package adversary
