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
	Chain        string      `json:"chain"`
	Address      string      `json:"address"`
	BlockNumber  uint64      `json:"block_number"`
	Time         string      `json:"time"`
	Contract     string      `json:"contract"`
	Amount       string      `json:"amount"`
	BalanceAfter string      `json:"balance_after"`
	Causes       []CauseData `json:"causes"`
	Reconciled   *bool       `json:"reconciled"`
	Difference   string      `json:"difference"`
	Traced       bool        `json:"traced"`
}

// CauseData is one movement behind a statement row.
type CauseData struct {
	Kind   string `json:"kind"`
	TxHash string `json:"transaction_hash"`
	Amount string `json:"amount"`
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
	d := ChangeData{Chain: c.Chain, Address: c.Address, BlockNumber: c.Block, Contract: c.Contract, Amount: c.Amount,
		BalanceAfter: c.BalanceAfter, Causes: make([]CauseData, len(c.Causes)), Difference: c.Difference, Traced: c.Traced}
	if !c.Time.IsZero() {
		d.Time = c.Time.UTC().Format(time.RFC3339)
	}
	if c.Checked {
		d.Reconciled = &c.Reconciled
	}
	if d.Difference == "" {
		d.Difference = "0"
	}
	for i, cs := range c.Causes {
		d.Causes[i] = CauseData{Kind: cs.Kind, TxHash: cs.TxHash, Amount: cs.Amount}
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
