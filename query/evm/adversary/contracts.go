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
	selBalanceOfID  = []byte{0x00, 0xfd, 0xd5, 0x8e} // balanceOf(address,uint256): ERC-1155
	selSafeTransfer = []byte{0xf2, 0x42, 0x43, 0x2a} // safeTransferFrom(address,address,uint256,uint256,bytes)
	selBatch2       = []byte{0, 0, 0, 3}             // batch2(from, to, id1, amount1, id2, amount2): TransferBatch of two ids
)

// Topics of the token logs: ERC-20 and ERC-721 Transfer, ERC-1155
// TransferSingle and TransferBatch.
var (
	transferTopic       = crypto.Keccak256([]byte("Transfer(address,address,uint256)"))
	transferSingleTopic = crypto.Keccak256([]byte("TransferSingle(address,address,address,uint256,uint256)"))
	transferBatchTopic  = crypto.Keccak256([]byte("TransferBatch(address,address,address,uint256[],uint256[])"))
)

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
// Transfer with four topics (the id indexed) and moves a token from
// from's count to to's (from 0: a mint), which balanceOf answers: read
// as an ERC-20, its amounts would be ids. It keeps counts, not owners:
// a transfer from a holder of none reverts, one of an id the holder
// does not own does not (the generator sends the ids it gave).
func nftCode() []byte {
	a := newAsm()
	a.pushN(0).op(vm.CALLDATALOAD).pushN(224).op(vm.SHR)
	a.op(vm.DUP1).pushBytes(selTransferFrom).op(vm.EQ).to("transfer").op(vm.JUMPI)
	a.op(vm.DUP1).pushBytes(selBalanceOf).op(vm.EQ).to("balanceOf").op(vm.JUMPI)
	a.label("fail").pushN(0).op(vm.DUP1, vm.REVERT)
	a.label("transfer")
	a.pushN(4).op(vm.CALLDATALOAD, vm.DUP1, vm.ISZERO).to("credit").op(vm.JUMPI) // [from]
	a.op(vm.DUP1, vm.SLOAD, vm.DUP1, vm.ISZERO).to("fail").op(vm.JUMPI)          // [from n]; none: revert
	a.pushN(1).op(vm.SWAP1, vm.SUB, vm.SWAP1, vm.SSTORE).op(vm.PUSH0)            // count[from] = n - 1; [0]
	a.label("credit").op(vm.POP)
	a.pushN(0x24).op(vm.CALLDATALOAD, vm.DUP1, vm.SLOAD).pushN(1).op(vm.ADD, vm.SWAP1, vm.SSTORE)
	a.pushN(0x44).op(vm.CALLDATALOAD).pushN(0x24).op(vm.CALLDATALOAD).pushN(4).op(vm.CALLDATALOAD)
	a.pushBytes(transferTopic).pushN(0).pushN(0).op(vm.LOG4, vm.STOP)
	a.label("balanceOf")
	a.pushN(4).op(vm.CALLDATALOAD, vm.SLOAD).pushN(0).op(vm.MSTORE).pushN(32).pushN(0).op(vm.RETURN)
	return a.bytes()
}

// Memory of multiCode: the arguments of the move under way; the first
// 64 bytes hash a balance's slot.
const (
	mFrom = 0x80
	mTo   = 0xa0
	mID   = 0xc0
	mAmt  = 0xe0
	mLog  = 0x100 // a log's data
)

// multiCode is an ERC-1155: balances by (holder, id) in the slot
// keccak256(holder, id), which balanceOf(holder, id) reads;
// safeTransferFrom(from, to, id, amount, data) moves amount of id (from
// 0: a mint; more than from holds: a revert) and logs TransferSingle;
// batch2(from, to, id1, amount1, id2, amount2) moves two ids, the same
// twice maybe, and logs one TransferBatch. The operator is the caller;
// nobody is asked for approval.
func multiCode() []byte {
	a := newAsm()
	a.pushN(0).op(vm.CALLDATALOAD).pushN(224).op(vm.SHR)
	a.op(vm.DUP1).pushBytes(selSafeTransfer).op(vm.EQ).to("single").op(vm.JUMPI)
	a.op(vm.DUP1).pushBytes(selBatch2).op(vm.EQ).to("batch").op(vm.JUMPI)
	a.op(vm.DUP1).pushBytes(selBalanceOfID).op(vm.EQ).to("balanceOf").op(vm.JUMPI)
	a.label("fail").pushN(0).op(vm.DUP1, vm.REVERT)

	arg := func(i uint64) *asm { return a.pushN(4 + 32*i).op(vm.CALLDATALOAD) }
	slot := func(holder uint64) { // [] → [slot of (holder, id)]
		a.pushN(holder).op(vm.MLOAD).pushN(0).op(vm.MSTORE)
		a.pushN(mID).op(vm.MLOAD).pushN(32).op(vm.MSTORE)
		a.pushN(64).pushN(0).op(vm.KECCAK256)
	}
	move := func(n string) { // balance[from][id] -= amount unless from is 0; balance[to][id] += amount
		a.pushN(mFrom).op(vm.MLOAD, vm.ISZERO).to("credit" + n).op(vm.JUMPI)
		slot(mFrom)
		a.op(vm.DUP1, vm.SLOAD).pushN(mAmt).op(vm.MLOAD)      // [slot bal amt]
		a.op(vm.DUP2, vm.DUP2, vm.GT).to("fail").op(vm.JUMPI) // amt > bal: revert
		a.op(vm.SWAP1, vm.SUB, vm.SWAP1, vm.SSTORE)           // balance = bal - amt
		a.label("credit" + n)
		slot(mTo)
		a.op(vm.DUP1, vm.SLOAD).pushN(mAmt).op(vm.MLOAD).op(vm.ADD, vm.SWAP1, vm.SSTORE)
	}
	setArgs := func(id, amt uint64) {
		arg(0).pushN(mFrom).op(vm.MSTORE)
		arg(1).pushN(mTo).op(vm.MSTORE)
		arg(id).pushN(mID).op(vm.MSTORE)
		arg(amt).pushN(mAmt).op(vm.MSTORE)
	}
	logTopics := func(topic []byte) { // [] → [to from caller topic]
		arg(1)
		arg(0).op(vm.CALLER).pushBytes(topic)
	}

	a.label("single")
	setArgs(2, 3)
	move("1")
	a.pushN(mID).op(vm.MLOAD).pushN(mLog).op(vm.MSTORE)
	a.pushN(mAmt).op(vm.MLOAD).pushN(mLog + 32).op(vm.MSTORE)
	logTopics(transferSingleTopic)
	a.pushN(64).pushN(mLog).op(vm.LOG4, vm.STOP)

	a.label("batch")
	setArgs(2, 3)
	move("2")
	setArgs(4, 5)
	move("3")
	// TransferBatch data: offsets of ids and amounts, then each as a
	// uint256[2].
	for i, v := range []func(){
		func() { a.pushN(64) }, func() { a.pushN(64 + 3*32) },
		func() { a.pushN(2) }, func() { arg(2) }, func() { arg(4) },
		func() { a.pushN(2) }, func() { arg(3) }, func() { arg(5) },
	} {
		v()
		a.pushN(mLog + 32*uint64(i)).op(vm.MSTORE)
	}
	logTopics(transferBatchTopic)
	a.pushN(8*32).pushN(mLog).op(vm.LOG4, vm.STOP)

	a.label("balanceOf")
	arg(0).pushN(mFrom).op(vm.MSTORE)
	arg(1).pushN(mID).op(vm.MSTORE)
	slot(mFrom)
	a.op(vm.SLOAD).pushN(0).op(vm.MSTORE).pushN(32).pushN(0).op(vm.RETURN)
	return a.bytes()
}

// deployCode is init code that returns runtime as the contract's code
// (devchain.InitCode takes 255 bytes at most).
func deployCode(runtime []byte) []byte {
	n := len(runtime)
	// PUSH2 n, DUP1, PUSH2 11 (this code's length), PUSH0, CODECOPY:
	// memory[0:n] = runtime; PUSH0, RETURN.
	init := []byte{byte(vm.PUSH2), byte(n >> 8), byte(n), byte(vm.DUP1), byte(vm.PUSH2), 0, 11,
		byte(vm.PUSH0), byte(vm.CODECOPY), byte(vm.PUSH0), byte(vm.RETURN)}
	return append(init, runtime...)
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

// relayCode passes all the value of any call on to payee, whatever the
// input: a plain transfer to it (no input) runs code that moves value
// inside the transaction, which only its traces show.
func relayCode(payee common.Address) []byte {
	a := newAsm()
	a.pushN(0).pushN(0).pushN(0).pushN(0) // retSize retOffset argsSize argsOffset
	a.op(vm.CALLVALUE).pushBytes(payee.Bytes()).op(vm.GAS, vm.CALL, vm.POP, vm.STOP)
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

// RevertMessage is the Error(string) message revertCode reverts with.
const RevertMessage = "adversary says no"

// revertCode reverts whatever it is sent, with Error(RevertMessage) as
// Solidity's require does.
func revertCode() []byte {
	a := newAsm()
	a.pushBytes([]byte{0x08, 0xc3, 0x79, 0xa0}).pushN(224).op(vm.SHL).pushN(0).op(vm.MSTORE) // Error(string)
	a.pushN(32).pushN(4).op(vm.MSTORE)                                                       // its offset
	a.pushN(uint64(len(RevertMessage))).pushN(36).op(vm.MSTORE)                              // its length
	a.pushBytes(common.RightPadBytes([]byte(RevertMessage), 32)).pushN(68).op(vm.MSTORE)
	return a.pushN(100).pushN(0).op(vm.REVERT).bytes()
}

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
