package api

import (
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
)

// pageTx is a transaction as a page holds it: a token transfer with its
// call data, its own native transfer and the token's.
func pageTx() query.Transaction {
	from, to, token := "0x"+strings.Repeat("a1", 20), "0x"+strings.Repeat("b2", 20), "0x"+strings.Repeat("c3", 20)
	return query.Transaction{Chain: "ETH", Hash: "0x" + strings.Repeat("d4", 32), BlockNumber: 21_000_123, BlockHash: "0x" + strings.Repeat("e5", 32),
		BlockTime: time.Unix(1_700_000_000, 0).UTC(), Index: 87, Status: "success", From: from, To: token,
		Value: query.AmountOf(0), Fee: query.MustParseAmount("1234567890123456"),
		Detail: evm.TxDetail{Nonce: 4711, Type: 2, GasLimit: 65_000, GasUsed: 51_234, EffectiveGasPrice: query.MustParseAmount("24096385542"), Method: "0xa9059cbb",
			Input: "0xa9059cbb" + strings.Repeat("0", 24) + to[2:] + strings.Repeat("0", 48) + "0de0b6b3a7640000", CumulativeGasUsed: 9_876_543}.JSON(),
		Transfers: []query.Transfer{
			{Position: -1, Asset: "native", From: from, To: token, Amount: query.AmountOf(0), Kind: "transaction", Symbol: "ETH", Decimals: 18, Name: "Ether"},
			{Position: 212, Asset: "erc20", Contract: token, From: from, To: to, Amount: query.MustParseAmount("1000000000000000000"), Kind: "token",
				Symbol: "DEMO", Decimals: 18, Name: "Demo Token"},
		}}
}

// pageTip is the tip the transactions of these tests are told against.
var pageTip = tip{head: 21_000_200, fin: query.Finality{Safe: 21_000_100, Finalized: 21_000_000, Source: query.FinalityByNode}}

// TestAppendTransactionPlain: a transaction whose strings are plain is
// written alike whether its document says so (copied) or not (looked
// at), with every transfer and with those of one address.
func TestAppendTransactionPlain(t *testing.T) {
	tx := pageTx()
	for _, only := range []string{"", tx.From, tx.Transfers[1].To} {
		looked := string(appendTransactionItem(nil, 1, &tx, false, only, pageTip))
		copied := string(appendTransactionItem(nil, 1, &tx, true, only, pageTip))
		if copied != looked {
			t.Errorf("only %q:\ncopied %s\nlooked %s", only, copied, looked)
		}
	}
}

// BenchmarkAppendTransaction: writing one transaction of a page as the
// transactions handler does, its strings looked at (a document of
// version 3 or before, or one with a string to escape) or copied.
func BenchmarkAppendTransaction(b *testing.B) {
	tx := pageTx()
	for _, plain := range []bool{false, true} {
		name := "looked"
		if plain {
			name = "plain"
		}
		b.Run(name, func(b *testing.B) {
			buf := appendTransactionItem(nil, 1, &tx, plain, tx.From, pageTip)
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				buf = appendTransactionItem(buf[:0], 1, &tx, plain, tx.From, pageTip)
			}
		})
	}
}
