package store

import (
	"reflect"
	"testing"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
)

// FuzzParseTxDoc feeds parseTxDoc arbitrary documents: it never panics,
// and a document it accepts writes back to the same transaction;
// readTxDoc reads what parseTxDoc reads, and a document parseTxDoc
// refuses as its row alone, saying why.
func FuzzParseTxDoc(f *testing.F) {
	t := query.Transaction{Chain: "ETH", Hash: "0xabc", BlockNumber: 7, BlockHash: "0xb7",
		BlockTime: time.Unix(1_700_000_000, 5000).UTC(), Index: 3, Status: query.StatusSuccess,
		From: "0x01", To: "0x02", Value: query.AmountOf(10), Fee: query.AmountOf(21000), Parties: []string{"0x0e"},
		Detail: []byte(`{"nonce":9,"contract_address":"0x0e"}`),
		Transfers: []query.Transfer{
			{Position: -1, Asset: query.AssetNative, From: "0x01", To: "0x02", Amount: query.AmountOf(10)},
			{Position: 4, Asset: query.AssetERC20, Contract: "0x0c", From: "0x02", To: "0x01", Amount: query.MustParseAmount("115792089237316195423570985008687907853269984665640564039457584007913129639935")},
		}}
	f.Add(appendTxDoc(nil, t, false))
	f.Add(appendTxDocV4(nil, fieldsTx()))
	f.Add(appendTxDoc(nil, query.Transaction{Hash: "0x1"}, true))
	f.Add([]byte("1:1"))
	f.Add([]byte("1:13:0xa99999999999999999999:"))
	f.Add([]byte("-1:x"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, err := parseTxDoc("ETH", string(doc), evm.LegacyDetail)
		if read := readTxDoc("ETH", string(doc), evm.LegacyDetail); err != nil {
			// A page answers the row alone, saying why, in clean text.
			if read.Unreadable == "" || !query.IsChainText(read.Unreadable, query.MaxReason) || !query.IsChainText(read.Hash, 0) || len(read.Transfers) > 0 {
				t.Fatalf("readTxDoc of an unreadable document: %+v", read)
			}
			return
		} else if !reflect.DeepEqual(read, got) {
			t.Fatalf("readTxDoc %+v, parseTxDoc %+v", read, got)
		}
		again, err := parseTxDoc("ETH", string(appendTxDoc(nil, got, false)), evm.LegacyDetail)
		if err != nil {
			t.Fatalf("a parsed document does not parse again: %v", err)
		}
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("round trip:\n%+v\n%+v", got, again)
		}
	})
}
