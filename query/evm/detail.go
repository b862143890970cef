package evm

import (
	"encoding/json"

	"github.com/wharfhq/wharf/query"
)

// TxDetail is the EVM family's document of a transaction
// (query.Transaction.Detail): query.TxDetail, which the fetcher's EVM
// matching builds until it moves here.
type TxDetail = query.TxDetail

// ParseTxDetail reads the document of an EVM transaction; a transaction
// without one (nil) reads as the zero TxDetail.
func ParseTxDetail(doc json.RawMessage) (TxDetail, error) { return query.ParseTxDetail(doc) }

// Detail is the TxDetail of t (the zero one when it has no valid one),
// for tests and tools that read a stored transaction's EVM fields.
func Detail(t query.Transaction) TxDetail { return query.EVMDetail(t) }
