package adversary

// The contracts a scenario deploys, assembled by asm.go. Storage keys
// are addresses themselves (a toy layout: no mapping hashes), which the
// node's balanceOf reads back all the same.

import (
	"encoding/binary"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"
)

// Function selectors of the contracts' calls.
var (
	selTransfer     = []byte{0xa9, 0x05, 0x9c, 0xbb} // transfer(address,uint256)
	selBalanceOf    = []byte{0x70, 0xa0, 0x82, 0x31} // balanceOf(address)
	selTransferFrom = []byte{0x23, 0xb8, 0x72, 0xdd} // transferFrom(address,address,uint256)
	selPoke         = []byte{0, 0, 0, 1}             // poke(address,int256): a balance changes, no log
	selMint         = []byte{0, 0, 0, 2}             // mint(address,uint256): Transfer from 0
)

// transferTopic is the topic of ERC-20 and ERC-721 Transfer logs.
var transferTopic = crypto.Keccak256([]byte("Transfer(address,address,uint256)"))

// tokenCode is an ERC-20 that keeps feePercent of every transfer (the
// Transfer log says the whole amount: a fee-on-transfer token that burns
// its fee silently), answers balanceOf only if withBalanceOf, and takes
// poke (a rebase: a balance changes with no log) and mint. It accepts
// ether with any call, so a transfer can move ether too.
func tokenCode(feePercent uint64, withBalanceOf bool) []byte {
	a := newAsm()
	a.pushN(0).op(vm.CALLDATALOAD).pushN(224).op(vm.SHR) // [sel]
	dispatch := func(sel []byte, label string) {
		a.op(vm.DUP1).pushBytes(sel).op(vm.EQ).to(label).op(vm.JUMPI)
	}
	dispatch(selTransfer, "transfer")
	if withBalanceOf {
		dispatch(selBalanceOf, "balanceOf")
	}
	dispatch(selPoke, "poke")
	dispatch(selMint, "mint")
	a.label("fail").pushN(0).op(vm.DUP1, vm.REVERT)

	a.label("transfer")
	a.pushN(0x24).op(vm.CALLDATALOAD)                                          // [amt]
	a.op(vm.CALLER, vm.SLOAD)                                                  // [amt bal]
	a.op(vm.DUP2, vm.DUP2, vm.LT).to("fail").op(vm.JUMPI)                      // bal < amt: revert
	a.op(vm.DUP2, vm.SWAP1, vm.SUB, vm.CALLER, vm.SSTORE)                      // bal[caller] = bal - amt; [amt]
	a.op(vm.DUP1).pushN(feePercent).op(vm.MUL).pushN(100).op(vm.SWAP1, vm.DIV) // [amt fee]
	a.op(vm.DUP2, vm.SUB)                                                      // [amt credit]
	a.pushN(4).op(vm.CALLDATALOAD, vm.DUP1, vm.SLOAD)                          // [amt credit to balTo]
	a.op(vm.DUP3, vm.ADD, vm.SWAP1, vm.SSTORE, vm.POP)                         // bal[to] += credit; [amt]
	a.pushN(0).op(vm.MSTORE)                                                   // memory[0] = amt
	a.pushN(4).op(vm.CALLDATALOAD, vm.CALLER).pushBytes(transferTopic).pushN(32).pushN(0).op(vm.LOG3)
	a.pushN(1).pushN(0).op(vm.MSTORE).pushN(32).pushN(0).op(vm.RETURN)

	if withBalanceOf {
		a.label("balanceOf")
		a.pushN(4).op(vm.CALLDATALOAD, vm.SLOAD).pushN(0).op(vm.MSTORE).pushN(32).pushN(0).op(vm.RETURN)
	}

	a.label("poke") // bal[a] += x (two's complement: a negative x takes)
	a.pushN(0x24).op(vm.CALLDATALOAD).pushN(4).op(vm.CALLDATALOAD, vm.DUP1, vm.SLOAD)
	a.op(vm.DUP3, vm.ADD, vm.SWAP1, vm.SSTORE, vm.STOP)

	a.label("mint") // bal[a] += x, Transfer(0, a, x)
	a.pushN(0x24).op(vm.CALLDATALOAD).pushN(4).op(vm.CALLDATALOAD, vm.DUP1, vm.SLOAD)
	a.op(vm.DUP3, vm.ADD, vm.SWAP1, vm.SSTORE) // [x]
	a.pushN(0).op(vm.MSTORE)
	a.pushN(4).op(vm.CALLDATALOAD).pushN(0).pushBytes(transferTopic).pushN(32).pushN(0).op(vm.LOG3, vm.STOP)
	return a.bytes()
}

// nftCode is an ERC-721-like contract: transferFrom(from, to, id) logs
// Transfer with four topics (the id indexed) and counts to's tokens,
// which balanceOf answers: read as an ERC-20, its amounts would be ids.
func nftCode() []byte {
	a := newAsm()
	a.pushN(0).op(vm.CALLDATALOAD).pushN(224).op(vm.SHR)
	a.op(vm.DUP1).pushBytes(selTransferFrom).op(vm.EQ).to("transfer").op(vm.JUMPI)
	a.op(vm.DUP1).pushBytes(selBalanceOf).op(vm.EQ).to("balanceOf").op(vm.JUMPI)
	a.pushN(0).op(vm.DUP1, vm.REVERT)
	a.label("transfer")
	a.pushN(0x44).op(vm.CALLDATALOAD).pushN(0x24).op(vm.CALLDATALOAD).pushN(4).op(vm.CALLDATALOAD)
	a.pushBytes(transferTopic).pushN(0).pushN(0).op(vm.LOG4)
	a.pushN(0x24).op(vm.CALLDATALOAD, vm.DUP1, vm.SLOAD).pushN(1).op(vm.ADD, vm.SWAP1, vm.SSTORE, vm.STOP)
	a.label("balanceOf")
	a.pushN(4).op(vm.CALLDATALOAD, vm.SLOAD).pushN(0).op(vm.MSTORE).pushN(32).pushN(0).op(vm.RETURN)
	return a.bytes()
}

// bouncerCode calls the address in its input's first 32 bytes with all
// the value it received and the rest of its input, then reverts: a
// payout inside a branch that does not happen.
func bouncerCode() []byte {
	a := newAsm()
	a.pushN(32).op(vm.CALLDATASIZE, vm.SUB)              // [n]
	a.op(vm.DUP1).pushN(32).pushN(0).op(vm.CALLDATACOPY) // memory[0:n] = input[32:]
	a.pushN(0).pushN(0).op(vm.DUP3).pushN(0)             // retSize retOffset argsSize argsOffset
	a.op(vm.CALLVALUE).pushN(0).op(vm.CALLDATALOAD, vm.GAS, vm.CALL)
	a.pushN(0).op(vm.DUP1, vm.REVERT)
	return a.bytes()
}

// creatorCode creates a contract by CREATE from its input as init code,
// with all the value it received.
func creatorCode() []byte {
	a := newAsm()
	a.op(vm.CALLDATASIZE).pushN(0).pushN(0).op(vm.CALLDATACOPY)
	a.op(vm.CALLDATASIZE).pushN(0).op(vm.CALLVALUE, vm.CREATE, vm.POP, vm.STOP)
	return a.bytes()
}

// revertCode reverts whatever it is sent.
func revertCode() []byte { return newAsm().pushN(0).op(vm.DUP1, vm.REVERT).bytes() }

// burnInit is init code that self-destructs to its own address: created
// and destroyed in one transaction, its balance is burnt (EIP-6780).
// salt makes each copy's address new.
func burnInit(salt uint64) []byte {
	a := newAsm().op(vm.ADDRESS, vm.SELFDESTRUCT)
	return binary.BigEndian.AppendUint64(a.bytes(), salt)
}

// bequeathInit is init code that self-destructs to heir: the created
// contract's value goes on in its creating transaction.
func bequeathInit(heir common.Address, salt uint64) []byte {
	a := newAsm().pushBytes(heir.Bytes()).op(vm.SELFDESTRUCT)
	return binary.BigEndian.AppendUint64(a.bytes(), salt)
}

// call2 packs a call of sel with an address and a number.
func call2(sel []byte, a common.Address, n *big.Int) []byte {
	out := append([]byte{}, sel...)
	out = append(out, common.LeftPadBytes(a.Bytes(), 32)...)
	return append(out, common.LeftPadBytes(word(n), 32)...)
}

// word is n as a 256-bit two's complement word.
func word(n *big.Int) []byte {
	if n.Sign() >= 0 {
		return n.Bytes()
	}
	m := new(big.Int).Lsh(big.NewInt(1), 256)
	return m.Add(m, n).Bytes()
}
