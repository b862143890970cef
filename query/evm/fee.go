package evm

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/wharfhq/wharf/query"
)

// The fee fields a rollup's receipts add. An OP-stack chain (op-geth,
// op-reth) takes from the sender, besides gasUsed × effectiveGasPrice,
// the L1 data fee (l1Fee) and, since Isthmus, the operator fee, which
// its receipts give as its two parameters; Scroll's receipts carry
// l1Fee too. A chain whose receipts carry none of them pays execution
// and blob gas only.

// depositTxType is the EIP-2718 type of an OP-stack deposit transaction:
// it mints its mint to its sender, moves its value, and pays no fee.
const depositTxType = 0x7e

// l1InfoDepositor sends the L1-info deposit that opens every OP-stack
// block (to the L1Block predeploy): the chain's own bookkeeping.
var l1InfoDepositor = common.HexToAddress("0xDeaDDEaDDeAdDeAdDEAdDEaddeAddEAdDEAd0001")

var million = big.NewInt(1_000_000)

// rollupFees are the receipt's rollup fee fields.
type rollupFees struct {
	L1Fee               *hexutil.Big    `json:"l1Fee"`
	OperatorFeeScalar   *hexutil.Uint64 `json:"operatorFeeScalar"`
	OperatorFeeConstant *hexutil.Uint64 `json:"operatorFeeConstant"`
	// DAFootprintGasScalar is on receipts from Jovian on, which also
	// changed the operator fee's formula.
	DAFootprintGasScalar *hexutil.Uint64 `json:"daFootprintGasScalar"`
}

// parts are the L1 data fee and the operator fee of a transaction that
// used gasUsed: Isthmus charges gasUsed × scalar / 1e6 + constant,
// Jovian gasUsed × scalar × 100 + constant.
func (f rollupFees) parts(gasUsed uint64) (l1, operator query.Amount) {
	if f.L1Fee != nil {
		l1 = query.AmountFromBig(f.L1Fee.ToInt())
	}
	if f.OperatorFeeScalar == nil && f.OperatorFeeConstant == nil {
		return l1, operator
	}
	var scalar, constant uint64
	if f.OperatorFeeScalar != nil {
		scalar = uint64(*f.OperatorFeeScalar)
	}
	if f.OperatorFeeConstant != nil {
		constant = uint64(*f.OperatorFeeConstant)
	}
	fee := new(big.Int).Mul(new(big.Int).SetUint64(gasUsed), new(big.Int).SetUint64(scalar))
	if f.DAFootprintGasScalar != nil {
		fee.Mul(fee, big.NewInt(100))
	} else {
		fee.Div(fee, million)
	}
	fee.Add(fee, new(big.Int).SetUint64(constant))
	return l1, query.AmountFromBig(fee)
}
