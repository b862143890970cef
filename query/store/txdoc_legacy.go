package store

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/wharfhq/wharf/query"
)

// The transaction documents of versions 1 to 5, written before chain
// families, held the fields of an Ethereum transaction (every chain then
// was one) in the document itself. They are read into the chain-neutral
// transaction, those fields as the EVM family's detail document: the
// same JSON, member for member, as the family's (query/evm TxDetail),
// which a test holds. Migration 0088 rewrote the documents stored then;
// a fetcher of the release before, during a rolling upgrade, may still
// write one.
//
// Version "5": version 4's, then the fee's parts (execution, blob, L1,
// operator) and mint, then the transfers. Version "4": version, plain, hash, block number, block hash, block time,
// index, status, from, to, value, fee, nonce, type, gas limit, gas used,
// effective gas price, method, created contract, input, cumulative gas
// used, revert reason, then fourteen fields per transfer as version 6's.
// Version "3" is version 4's without plain (read as not plain). Version
// "2" stops after the created contract and has nine fields per transfer
// (without name, token id, call type, call path and error); version "1"
// (before migration 0003) stops after the nonce and has six fields per
// transfer, without kind, symbol and decimals.

// isLegacyTxDoc reports whether v is the version of a document written
// before chain families.
func isLegacyTxDoc(v string) bool { return v == "5" || v == "4" || v == "3" || v == "2" || v == "1" }

// legacyDetail is the EVM family's detail document, as those documents'
// fields make it.
type legacyDetail struct {
	Nonce             uint64       `json:"nonce"`
	Type              uint8        `json:"type"`
	GasLimit          uint64       `json:"gas_limit"`
	GasUsed           uint64       `json:"gas_used"`
	EffectiveGasPrice query.Amount `json:"effective_gas_price"`
	Method            string       `json:"method"`
	Created           string       `json:"contract_address"`
	Input             string       `json:"input"`
	CumulativeGasUsed uint64       `json:"cumulative_gas_used"`
	RevertReason      string       `json:"revert_reason"`
}

func (d legacyDetail) json() json.RawMessage {
	b, err := json.Marshal(d)
	if err != nil {
		panic(fmt.Sprintf("store: a legacy transaction detail does not encode: %v", err)) // numbers and strings only
	}
	return b
}

// legacyTransaction is what a transaction stored without any document
// (before migration 0002: its columns and transfer rows alone) reads as.
func legacyTransaction(t query.Transaction, nonce uint64) query.Transaction {
	t.Detail = legacyDetail{Nonce: nonce}.json()
	return t
}

// parseLegacyTxDocInto is parseTxDocInto of a document of version 1 to 5.
func parseLegacyTxDocInto(t *query.Transaction, chain string, doc string) (plain bool, err error) {
	r := txDocReader{s: doc}
	v := r.string()
	if v == "5" || v == "4" {
		switch r.string() {
		case "1":
			plain = true
		case "0":
		default:
			r.err = errTxDoc
		}
	}
	*t = query.Transaction{Chain: chain, Hash: r.string(), BlockNumber: r.uint(), BlockHash: r.string(),
		Transfers: t.Transfers[:0], Parties: t.Parties[:0]}
	if bt := r.string(); bt != "" {
		t.BlockTime = time.Unix(0, r.signed(bt)).UTC()
	}
	t.Index = uint(r.uint())
	t.Status, t.From, t.To, t.Value, t.Fee = r.string(), r.string(), r.string(), r.amount(), r.amount()
	var d legacyDetail
	d.Nonce = r.uint()
	if v != "1" {
		d.Type, d.GasLimit, d.GasUsed = uint8(r.uint()), r.uint(), r.uint()
		d.EffectiveGasPrice, d.Method, d.Created = r.amount(), r.string(), r.string()
	}
	full := v == "5" || v == "4" || v == "3"
	if full {
		d.Input, d.CumulativeGasUsed, d.RevertReason = r.string(), r.uint(), r.string()
	}
	if v == "5" {
		t.FeeParts = query.FeeParts{Execution: r.amount(), Blob: r.amount(), L1: r.amount(), Operator: r.amount()}
		t.Mint = r.amount()
	}
	parseTransfers(&r, t, v != "1", full)
	if r.err != nil {
		return false, fmt.Errorf("transaction %s: %w", t.Hash, r.err)
	}
	if len(t.Parties) == 0 {
		t.Parties = nil
	}
	if d.Created != "" {
		t.Parties = append(t.Parties, d.Created)
	}
	t.Detail = d.json()
	// The detail is JSON: plain says what it said of the other fields.
	return plain, nil
}
