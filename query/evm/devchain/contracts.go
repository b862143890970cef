package devchain

import (
	"math/big"
	"slices"

	"github.com/ethereum/go-ethereum/common"
)

// The dev chain's small demo contracts, in genesis at fixed addresses,
// written by hand in EVM assembly because no compiler runs here (the
// assembly is beside each). Each moves
// ether the way a real contract does: a Safe or an exchange paying out
// (the forwarder), a SELFDESTRUCT, a CREATE2 with value.
var (
	forwarderAddr  = common.HexToAddress("0x00000000000000000000000000000000000f0001")
	destructorAddr = common.HexToAddress("0x00000000000000000000000000000000000f0002")
	factoryAddr    = common.HexToAddress("0x00000000000000000000000000000000000f0003")
)

// forwarderCode calls the address in the first 32 bytes of its input
// with all the value it received and the rest of its input, and stops
// whether that call succeeded or not (a reverted inner call leaves the
// value with the forwarder):
//
//	PUSH1 0x20 CALLDATASIZE SUB          ; n = size of the rest
//	DUP1 PUSH1 0x20 PUSH1 0 CALLDATACOPY ; memory[0:n] = input[32:]
//	PUSH1 0 PUSH1 0 DUP3 PUSH1 0         ; retSize retOffset argsSize=n argsOffset
//	CALLVALUE PUSH1 0 CALLDATALOAD GAS   ; value, to = input[0:32], all gas
//	CALL POP POP STOP
var forwarderCode = common.FromHex("0x602036038060206000376000600082600034600035" + "5af1505000")

// destructorCode keeps ether sent to it without input, and with input
// self-destructs to the address in its first 32 bytes, which receives
// all its balance (after Cancun the code stays, so it can be used again):
//
//	CALLDATASIZE PUSH1 5 JUMPI STOP
//	JUMPDEST PUSH1 0 CALLDATALOAD SELFDESTRUCT
var destructorCode = common.FromHex("0x36600557005b600035ff")

// factoryCode creates a contract by CREATE2 (salt 0) from its input as
// init code, with all the value it received:
//
//	CALLDATASIZE PUSH1 0 PUSH1 0 CALLDATACOPY ; memory = input
//	PUSH1 0 CALLDATASIZE PUSH1 0 CALLVALUE    ; salt, size, offset, value
//	CREATE2 POP STOP
var factoryCode = common.FromHex("0x3660006000376000366000" + "34f55000")

// initCode returns the init code that deploys runtime as it is:
//
//	PUSH1 len DUP1 PUSH1 11 PUSH1 0 CODECOPY PUSH1 0 RETURN ; then runtime
func initCode(runtime []byte) []byte {
	return append([]byte{0x60, byte(len(runtime)), 0x80, 0x60, 0x0b, 0x60, 0x00, 0x39, 0x60, 0x00, 0xf3}, runtime...)
}

// contractGas is the gas limit of the demo contracts' calls: room for a
// value call that creates an account at the state-growth prices of the
// newest forks (over 200,000 gas on geth --dev).
const contractGas = 1_000_000

// ForwarderCode, DestructorCode and FactoryCode return the runtime code
// of the demo contracts, for deploying them on another node (the tests
// against a real geth do).
func ForwarderCode() []byte { return slices.Clone(forwarderCode) }

// DestructorCode returns the runtime code of the destructor (see ForwarderCode).
func DestructorCode() []byte { return slices.Clone(destructorCode) }

// FactoryCode returns the runtime code of the factory (see ForwarderCode).
func FactoryCode() []byte { return slices.Clone(factoryCode) }

// InitCode returns the init code that deploys runtime as it is.
func InitCode(runtime []byte) []byte { return initCode(runtime) }

// DemoTokenCode returns the creation code of the demo token with its
// constructor's argument: supply tokens to the deployer.
func DemoTokenCode(supply *big.Int) ([]byte, error) {
	a, code, err := demoToken()
	if err != nil {
		return nil, err
	}
	args, err := a.Pack("", supply)
	if err != nil {
		return nil, err
	}
	return append(code, args...), nil
}

// DemoTokenTransfer returns the input of the token's transfer(to, amount).
func DemoTokenTransfer(to common.Address, amount *big.Int) ([]byte, error) {
	a, _, err := demoToken()
	if err != nil {
		return nil, err
	}
	return a.Pack("transfer", to, amount)
}
