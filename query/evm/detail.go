package evm

import (
	"encoding/json"
	"fmt"

	"github.com/wharfhq/wharf/query"
)

// TxDetail is the EVM family's document of a transaction
// (query.Transaction.Detail): the fields only an EVM transaction has,
// named as the API writes them, in that order. Its strings come from the
// node and are query.ChainText when JSON makes the document.
type TxDetail struct {
	Nonce uint64 `json:"nonce"`
	// Type is the EIP-2718 transaction type (0 legacy, 2 dynamic fee...).
	Type uint8 `json:"type"`
	// GasLimit and GasUsed are the transaction's gas; EffectiveGasPrice
	// is the wei it paid a unit of gas.
	GasLimit          uint64       `json:"gas_limit"`
	GasUsed           uint64       `json:"gas_used"`
	EffectiveGasPrice query.Amount `json:"effective_gas_price"`
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

// JSON is d's document, its strings made query.ChainText (the revert
// reason cut to query.MaxReason characters).
func (d TxDetail) JSON() json.RawMessage {
	d.Method, d.Created, d.Input = query.ChainText(d.Method, 0), query.ChainText(d.Created, 0), query.ChainText(d.Input, 0)
	d.RevertReason = query.ChainText(d.RevertReason, query.MaxReason)
	b, err := json.Marshal(d)
	if err != nil {
		panic(fmt.Sprintf("evm: a transaction's detail does not encode: %v", err)) // numbers and valid text only
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
		return TxDetail{}, fmt.Errorf("evm: transaction detail: %w", err)
	}
	return d, nil
}

// Detail is the TxDetail of t (the zero one when it has no valid one),
// for tests and tools that read a stored transaction's EVM fields.
func Detail(t query.Transaction) TxDetail {
	d, _ := ParseTxDetail(t.Detail)
	return d
}
