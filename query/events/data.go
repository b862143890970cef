package events

import (
	"encoding/json"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/rowjson"
)

// ChangeData is the data of a balance_change, unreconciled or
// balance_change_retracted event: the statement row as
// /balance_changes lists it, with its chain and address.
type ChangeData struct {
	Chain        string       `json:"chain"`
	Address      string       `json:"address"`
	BlockNumber  uint64       `json:"block_number"`
	Time         string       `json:"time"`
	Contract     string       `json:"contract"`
	TokenID      string       `json:"token_id"`
	Amount       query.Amount `json:"amount"`
	BalanceAfter query.Amount `json:"balance_after"`
	Causes       []CauseData  `json:"causes"`
	Reconciled   *bool        `json:"reconciled"`
	Difference   query.Amount `json:"difference"`
	Internals    bool         `json:"traced"`
	// Finality is the row's block's as the event was written: latest,
	// safe or finalized (a backfilled row may be final when stored).
	Finality string `json:"finality"`
}

// CauseData is one movement behind a statement row.
type CauseData struct {
	Kind   string       `json:"kind"`
	TxHash string       `json:"transaction_hash"`
	Amount query.Amount `json:"amount"`
	// Outpoint is the output a UTXO chain's cause received or spent,
	// txid:vout.
	Outpoint   string  `json:"outpoint,omitempty"`
	Withdrawal *uint64 `json:"withdrawal_index"` // nil unless a withdrawal
	Validator  *uint64 `json:"validator_index"`
	// FeeParts split a fee with a part beyond execution; nil otherwise.
	FeeParts *FeePartsData `json:"fee_parts,omitempty"`
}

// FeePartsData are a fee's parts (query.FeeParts), in wei.
type FeePartsData struct {
	Execution query.Amount `json:"execution"`
	Blob      query.Amount `json:"blob"`
	L1        query.Amount `json:"l1"`
	Operator  query.Amount `json:"operator"`
}

// StateData is the data of a subscription_state event.
type StateData struct {
	Chain        string  `json:"chain"`
	Address      string  `json:"address"`
	State        string  `json:"state"`
	HistoryStart *uint64 `json:"history_start_block"`
}

// FinalizedData is the data of a finalized event: the address's
// statement rows in blocks FromBlock to BlockNumber (BalanceChanges of
// them) became final, by the node's finalized tag (Source "node") or by
// depth ("confirmations").
type FinalizedData struct {
	Chain          string `json:"chain"`
	Address        string `json:"address"`
	BlockNumber    uint64 `json:"block_number"`
	FromBlock      uint64 `json:"from_block"`
	BalanceChanges int    `json:"balance_changes"`
	Source         string `json:"source"`
}

// FinalizedJSON is the data of a finalized event.
func FinalizedJSON(d FinalizedData) string {
	b, _ := json.Marshal(d)
	return string(b)
}

// ChangeJSON is the data of an event about statement row c, whose block
// is of finality: a ChangeData, written by hand (rowjson.AppendChange,
// the API's writer of a statement row; a test holds it equal to
// json.Marshal of the ChangeData of c).
func ChangeJSON(c query.BalanceChange, finality string) string {
	b := append(make([]byte, 0, 512), `{"chain":`...)
	b = rowjson.AppendString(b, c.Chain)
	b = append(b, `,"address":`...)
	b = rowjson.AppendString(b, c.Address)
	b = append(b, ',')
	b = rowjson.AppendChange(b, &c, nil, finality)
	return string(append(b, '}'))
}

// StateJSON is the data of a subscription_state event: the address's
// state and, once it has one, the first block of its covered range.
func StateJSON(chain, address, state string, historyStart *uint64) string {
	b, _ := json.Marshal(StateData{Chain: chain, Address: address, State: state, HistoryStart: historyStart})
	return string(b)
}
