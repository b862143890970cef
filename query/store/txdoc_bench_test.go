package store

import (
	"testing"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
)

// BenchmarkParseTxDoc: reading a page's document into the reused
// transaction, as SubscriptionTransactionsFunc does.
func BenchmarkParseTxDoc(b *testing.B) {
	doc := string(appendTxDoc(nil, fieldsTx(), true))
	var t query.Transaction
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, err := parseTxDocInto(&t, "ETH", doc, evm.LegacyDetail); err != nil {
			b.Fatal(err)
		}
	}
}
