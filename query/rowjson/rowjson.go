// Package rowjson writes by hand the JSON that the API's pages and the
// event feed share, without encoding/json's reflection: a string and an
// amount as encoding/json writes them, and a statement row's fields, as
// /balance_changes lists a row and a balance_change event carries it.
// Tests hold each byte for byte equal to encoding/json of the API's and
// the feed's types (query/api, query/events).
package rowjson

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/wharfhq/wharf/query"
)

// AppendString appends s quoted as encoding/json quotes it:
// query.PlainText is copied; anything else (rare here: hashes, addresses
// and amounts are hex or decimal) goes through json.Marshal itself. A
// page quotes some 60 KB of strings, so the check is one table lookup a
// byte (with seven comparisons a byte it was 9% of the server's CPU on a
// transactions page).
func AppendString(b []byte, s string) []byte { return AppendText(b, s, false) }

// AppendText is AppendString of s, told whether s is known to be
// query.PlainText (a transaction's document says so of its strings):
// then s is copied without a look at its bytes.
func AppendText(b []byte, s string, plain bool) []byte {
	if !plain && !query.PlainText(s) {
		q, _ := json.Marshal(s) // a string always marshals
		return append(b, q...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// AppendAmount appends a as a JSON string: its digits need no escaping.
func AppendAmount(b []byte, a query.Amount) []byte {
	b = append(b, '"')
	b = append(b, a.String()...)
	return append(b, '"')
}

// AppendChange appends the fields of statement row c, without braces:
// block_number, time, contract and token_id (of c's holding key), then,
// with label, the asset's (asset, symbol, decimals: the API's row has
// them, an event's data has not), then amount, balance_after, causes,
// reconciled (null when not checked), difference, traced and finality
// (query.FinalityLatest, FinalitySafe or FinalityFinalized).
func AppendChange(b []byte, c *query.BalanceChange, label *query.Label, finality string) []byte {
	b = append(b, `"block_number":`...)
	b = strconv.AppendUint(b, c.Block, 10)
	b = append(b, `,"time":"`...)
	if !c.Time.IsZero() {
		// Digits, '-', ':', 'T' and 'Z': nothing to escape.
		b = c.Time.UTC().AppendFormat(b, time.RFC3339)
	}
	contract, id := query.SplitHoldingKey(c.Contract)
	b = append(b, `","contract":`...)
	b = AppendString(b, contract)
	b = append(b, `,"token_id":`...)
	b = AppendString(b, id)
	if label != nil {
		b = append(b, `,"asset":`...)
		b = AppendString(b, label.Asset)
		b = append(b, `,"symbol":`...)
		b = AppendString(b, label.Symbol)
		b = append(b, `,"decimals":`...)
		b = strconv.AppendInt(b, int64(label.Decimals), 10)
	}
	b = append(b, `,"amount":`...)
	b = AppendAmount(b, c.Amount)
	b = append(b, `,"balance_after":`...)
	b = AppendAmount(b, c.BalanceAfter)
	b = append(b, `,"causes":[`...)
	for j := range c.Causes {
		if j > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"kind":`...)
		b = AppendString(b, c.Causes[j].Kind)
		b = append(b, `,"transaction_hash":`...)
		b = AppendString(b, c.Causes[j].TxHash)
		b = append(b, `,"amount":`...)
		b = AppendAmount(b, c.Causes[j].Amount)
		if op, ok := c.Causes[j].Outpoint(); ok {
			b = append(b, `,"outpoint":`...)
			b = AppendString(b, op)
		}
		if index, validator, ok := c.Causes[j].Withdrawal(); ok {
			b = append(b, `,"withdrawal_index":`...)
			b = strconv.AppendUint(b, index, 10)
			b = append(b, `,"validator_index":`...)
			b = strconv.AppendUint(b, validator, 10)
		} else {
			b = append(b, `,"withdrawal_index":null,"validator_index":null`...)
		}
		if p := c.Causes[j].Fee; p != nil && p.Split() {
			b = AppendFeeParts(append(b, `,"fee_parts":`...), *p)
		}
		b = append(b, '}')
	}
	b = append(b, `],"reconciled":`...)
	if c.Checked {
		b = strconv.AppendBool(b, c.Reconciled)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"difference":`...)
	b = AppendAmount(b, c.Difference)
	b = append(b, `,"traced":`...)
	b = strconv.AppendBool(b, c.Internals)
	b = append(b, `,"finality":"`...) // a word: nothing to escape
	b = append(b, finality...)
	return append(b, '"')
}

// AppendFeeParts appends a fee's parts as an object of their amounts:
// execution, blob, l1, operator.
func AppendFeeParts(b []byte, p query.FeeParts) []byte {
	b = AppendAmount(append(b, `{"execution":`...), p.Execution)
	b = AppendAmount(append(b, `,"blob":`...), p.Blob)
	b = AppendAmount(append(b, `,"l1":`...), p.L1)
	b = AppendAmount(append(b, `,"operator":`...), p.Operator)
	return append(b, '}')
}
