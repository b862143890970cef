package query

import (
	"encoding/json"
	"fmt"
)

// TxDetail is the EVM family's document of a transaction
// (Transaction.Detail; query/evm calls it evm.TxDetail). It sits in the
// root beside SourceTx and Receipt, the EVM's source types, while the
// EVM's matching still runs in query/fetch, which imports no family
// package; it moves into query/evm with them. The fields only an EVM transaction has,
// named as the API writes them, in that order. Its strings come from the
// node and are ChainText when JSON makes the document.
type TxDetail struct {
	Nonce uint64 `json:"nonce"`
	// Type is the EIP-2718 transaction type (0 legacy, 2 dynamic fee...).
	Type uint8 `json:"type"`
	// GasLimit and GasUsed are the transaction's gas; EffectiveGasPrice
	// is the wei it paid a unit of gas.
	GasLimit          uint64 `json:"gas_limit"`
	GasUsed           uint64 `json:"gas_used"`
	EffectiveGasPrice Amount `json:"effective_gas_price"`
	// Method is the input's 4-byte selector, 0x and 8 hex digits; "" when
	// the input is shorter (a plain transfer).
	Method string `json:"method"`
	// Created is the contract the transaction created, top-level or
	// inside; "" when none.
	Created string `json:"contract_address"`
	// Input is the transaction's input (calldata), 0x-hex.
	Input string `json:"input"`
	// CumulativeGasUsed is the gas used in the block up to and with this
	// transaction (the receipt's).
	CumulativeGasUsed uint64 `json:"cumulative_gas_used"`
	// RevertReason says why a failed transaction reverted, when the node
	// traced it: the message of an Error(string), "Panic(0x..)" and its
	// meaning for a Panic(uint256), the revert data in 0x-hex when it is
	// neither, or the EVM's error (such as "out of gas") when there is
	// no data; "" for a transaction that succeeded or was not traced.
	RevertReason string `json:"revert_reason"`
}

// JSON is d's document, its strings made ChainText (the revert
// reason cut to MaxReason characters).
func (d TxDetail) JSON() json.RawMessage {
	d.Method, d.Created, d.Input = ChainText(d.Method, 0), ChainText(d.Created, 0), ChainText(d.Input, 0)
	d.RevertReason = ChainText(d.RevertReason, MaxReason)
	b, err := json.Marshal(d)
	if err != nil {
		panic(fmt.Sprintf("query: a transaction's detail does not encode: %v", err)) // numbers and valid text only
	}
	return b
}

// ParseTxDetail reads the document of an EVM transaction; a transaction
// without one (nil) reads as the zero TxDetail.
func ParseTxDetail(doc json.RawMessage) (TxDetail, error) {
	var d TxDetail
	if len(doc) == 0 {
		return d, nil
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return TxDetail{}, fmt.Errorf("query: EVM transaction detail: %w", err)
	}
	return d, nil
}

// EVMDetail is the TxDetail of t (the zero one when it has no valid one),
// for tests and tools that read a stored transaction's EVM fields.
func EVMDetail(t Transaction) TxDetail {
	d, _ := ParseTxDetail(t.Detail)
	return d
}
