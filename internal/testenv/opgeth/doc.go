// Package opgeth runs a real OP-stack execution client for tests: the
// pinned op-geth (make op-geth) on an OP genesis (every fork from Bedrock
// to Isthmus active at block 0, the L1Block predeploy holding the L1 base
// fee, blob base fee, scalars and operator-fee parameters), driven by a
// small sequencer over the Engine API in op-node's place: each block it
// builds starts with the L1-info deposit, then the user deposits and the
// signed transactions asked for, in that order.
//
// It lives apart from package testenv so that tests which never start
// op-geth do not compile go-ethereum.
package opgeth
