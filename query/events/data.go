package events

import (
	"encoding/json"
	"time"

	"github.com/wharfhq/wharf/query"
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
	Traced       bool         `json:"traced"`
}

// CauseData is one movement behind a statement row.
type CauseData struct {
	Kind       string       `json:"kind"`
	TxHash     string       `json:"transaction_hash"`
	Amount     query.Amount `json:"amount"`
	Withdrawal *uint64      `json:"withdrawal_index"` // nil unless a withdrawal
	Validator  *uint64      `json:"validator_index"`
}

// StateData is the data of a subscription_state event.
type StateData struct {
	Chain        string  `json:"chain"`
	Address      string  `json:"address"`
	State        string  `json:"state"`
	HistoryStart *uint64 `json:"history_start_block"`
}

// ChangeJSON is the data of an event about statement row c.
func ChangeJSON(c query.BalanceChange) string {
	contract, id := query.SplitHoldingKey(c.Contract)
	d := ChangeData{Chain: c.Chain, Address: c.Address, BlockNumber: c.Block, Contract: contract, TokenID: id, Amount: c.Amount,
		BalanceAfter: c.BalanceAfter, Causes: make([]CauseData, len(c.Causes)), Difference: c.Difference, Traced: c.Traced}
	if !c.Time.IsZero() {
		d.Time = c.Time.UTC().Format(time.RFC3339)
	}
	if c.Checked {
		d.Reconciled = &c.Reconciled
	}
	for i, cs := range c.Causes {
		d.Causes[i] = CauseData{Kind: cs.Kind, TxHash: cs.TxHash, Amount: cs.Amount}
		if w := cs.Withdrawal; w != nil {
			d.Causes[i].Withdrawal, d.Causes[i].Validator = &w.Index, &w.Validator
		}
	}
	b, _ := json.Marshal(d) // strings, numbers and bools only
	return string(b)
}

// StateJSON is the data of a subscription_state event: the address's
// state and, once it has one, the first block of its covered range.
func StateJSON(chain, address, state string, historyStart *uint64) string {
	b, _ := json.Marshal(StateData{Chain: chain, Address: address, State: state, HistoryStart: historyStart})
	return string(b)
}
