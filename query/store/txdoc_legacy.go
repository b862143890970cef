package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/wharfhq/wharf/query"
)

// The transaction documents of versions 1 to 5, written before chain
// families, held the fields of an Ethereum transaction (every chain then
// was one) in the document itself. They are read into the chain-neutral
// transaction, those fields made the family's detail document by the
// family (WithLegacyDetail: evm.LegacyDetail), which the store passes
// them to as strings, in order, without reading them. Migration 0088
// rewrote the documents stored then; a fetcher of the release before,
// during a rolling upgrade, may still write one.
//
// Version "5": version 4's, then the fee's parts (execution, blob, L1,
// operator) and mint, then the transfers. Version "4": version, plain,
// hash, block number, block hash, block time, index, status, from, to,
// value, fee, the family's ten fields, then fourteen fields per transfer
// as version 6's. Version "3" is version 4's without plain (read as not
// plain). Version "2" has the family's first seven fields and nine per
// transfer (without name, token id, call type, call path and error);
// version "1" (before migration 0003) the family's first field and six
// per transfer, without kind, symbol and decimals.

// isLegacyTxDoc reports whether v is the version of a document written
// before chain families.
func isLegacyTxDoc(v string) bool { return v == "5" || v == "4" || v == "3" || v == "2" || v == "1" }

// legacyFamilyFields is how many of the family's fields a document of
// version v (isLegacyTxDoc) holds after the fee, in the order written:
// the ten of versions 3 to 5, the first seven in version 2, the first in
// version 1.
func legacyFamilyFields(v string) int {
	switch v {
	case "1":
		return 1
	case "2":
		return 7
	}
	return 10
}

// LegacyDetail makes the family's detail document of a transaction
// stored before chain families, when every chain was an EVM chain, from
// the fields those rows held of it, in the order they held them
// (txdoc_legacy.go): one to ten, by the document's version. It returns
// the detail and the contract the transaction created ("" for none),
// which the transaction lists among its parties. The EVM family's is
// evm.LegacyDetail; errors: fields that are not its.
type LegacyDetail func(fields []string) (detail json.RawMessage, created string, err error)

// WithLegacyDetail reads the transactions stored before chain families
// (and lets migration 0088 rewrite them) with d. Without it a document
// of theirs reads as its key alone, unreadable, and a row stored before
// documents as its columns, without a detail.
func WithLegacyDetail(d LegacyDetail) Option { return func(db *DB) { db.legacy = d } }

// errNoLegacy is the read of a transaction stored before chain families
// by a store opened without WithLegacyDetail.
var errNoLegacy = errors.New("stored before chain families, and the store reads no such document (store.WithLegacyDetail)")

// legacyTransaction is what a transaction stored without any document
// (before migration 0002: its columns and transfer rows alone) reads as:
// the one field of the family's those columns hold (legacy) its detail,
// by ld; without ld, the columns alone.
func legacyTransaction(t query.Transaction, legacy uint64, ld LegacyDetail) query.Transaction {
	if ld == nil {
		return t
	}
	detail, _, err := ld([]string{strconv.FormatUint(legacy, 10)})
	if err != nil {
		return query.Transaction{Chain: t.Chain, Hash: t.Hash, BlockNumber: t.BlockNumber, BlockHash: t.BlockHash, BlockTime: t.BlockTime,
			Index: t.Index, Unreadable: query.ChainText("the stored transaction cannot be read: "+err.Error(), query.MaxReason)}
	}
	t.Detail = detail
	return t
}

// parseLegacyTxDocInto is parseTxDocInto of a document of version 1 to
// 5, its family's fields made a detail by ld.
func parseLegacyTxDocInto(t *query.Transaction, chain string, doc string, ld LegacyDetail) (plain bool, err error) {
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
	fields := make([]string, legacyFamilyFields(v))
	for i := range fields {
		fields[i] = r.string()
	}
	if v == "5" {
		t.FeeParts = query.FeeParts{Execution: r.amount(), Blob: r.amount(), L1: r.amount(), Operator: r.amount()}
		t.Mint = r.amount()
	}
	full := v == "5" || v == "4" || v == "3"
	parseTransfers(&r, t, v != "1", full)
	if r.err != nil {
		return false, fmt.Errorf("transaction %s: %w", t.Hash, r.err)
	}
	if ld == nil {
		return false, fmt.Errorf("transaction %s: %w", t.Hash, errNoLegacy)
	}
	detail, created, err := ld(fields)
	if err != nil {
		return false, fmt.Errorf("transaction %s: %w: %w", t.Hash, errTxDoc, err)
	}
	if len(t.Parties) == 0 {
		t.Parties = nil
	}
	if created != "" {
		t.Parties = append(t.Parties, created)
	}
	t.Detail = detail
	// The detail is JSON: plain says what it said of the other fields.
	return plain, nil
}
