package evm_test

import (
	"testing"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
)

// TestPlainBlock: a block is left untraced only when every one of its
// transactions is a successful call without input, of a type without
// authorizations, that used the base 21,000 gas; anything that may have
// run code (a byte of input, a gas more, a creation, a failure, a
// type-4 transaction, an OP-stack deposit, a receipt missing) is traced.
func TestPlainBlock(t *testing.T) {
	plain := func() (query.SourceTx, query.Receipt) {
		return query.SourceTx{Hash: "0x01", To: "0xbb", Type: 2},
			query.Receipt{TxHash: "0x01", Status: query.StatusSuccess, GasUsed: 21_000}
	}
	for _, tc := range []struct {
		name   string
		change func(*query.SourceTx, *query.Receipt)
		want   bool
	}{
		{"a plain transfer", func(*query.SourceTx, *query.Receipt) {}, true},
		{"a legacy plain transfer", func(tx *query.SourceTx, _ *query.Receipt) { tx.Type = 0 }, true},
		{"one byte of input", func(tx *query.SourceTx, _ *query.Receipt) { tx.Input = []byte{0} }, false},
		{"one gas more", func(_ *query.SourceTx, r *query.Receipt) { r.GasUsed = 21_001 }, false},
		{"a creation", func(tx *query.SourceTx, _ *query.Receipt) { tx.To = "" }, false},
		{"a failure", func(_ *query.SourceTx, r *query.Receipt) { r.Status = query.StatusFailed }, false},
		{"a set-code transaction", func(tx *query.SourceTx, _ *query.Receipt) { tx.Type = 4 }, false},
		{"an OP-stack deposit", func(tx *query.SourceTx, _ *query.Receipt) { tx.Type = 0x7e }, false},
		{"a system transaction", func(tx *query.SourceTx, _ *query.Receipt) { tx.System = true }, false},
		{"another transaction's receipt", func(_ *query.SourceTx, r *query.Receipt) { r.TxHash = "0x02" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx, r := plain()
			other, otherR := plain()
			other.Hash, otherR.TxHash = "0x03", "0x03"
			tc.change(&tx, &r)
			b := query.SourceBlock{Txs: []query.SourceTx{other, tx}}
			if got := evm.PlainBlock(b, []query.Receipt{otherR, r}); got != tc.want {
				t.Errorf("plainBlock = %v, want %v", got, tc.want)
			}
		})
	}
	tx, r := plain()
	if evm.PlainBlock(query.SourceBlock{Txs: []query.SourceTx{tx, tx}}, []query.Receipt{r}) {
		t.Error("a block with fewer receipts than transactions is plain")
	}
	if !evm.PlainBlock(query.SourceBlock{}, nil) {
		t.Error("an empty block is not plain")
	}
}
