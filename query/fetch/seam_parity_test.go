package fetch_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/wharfhq/wharf/query"
	seam "github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/evm"
)

// checkSeamParity holds what the head follower stored for blocks from to
// to (the transactions of addresses and their statement rows' causes) to
// the EVM family's Activity of the same blocks through the seam
// (evm.Reader, its Account transactions and its Moves): the fetcher reads
// query.Source with its own copy of the movement rules until it reads
// through the seam, and this fails when the two part, naming the
// difference.
func checkSeamParity(t *testing.T, e *env, from, to uint64, addresses []string) {
	t.Helper()
	ctx := context.Background()
	r := evm.NewReader(e.src)
	api, err := r.ProbeInternals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.UseInternals(api)
	tracked := make(map[string]bool, len(addresses))
	for _, a := range addresses {
		tracked[a] = true
	}
	var acts []seam.BlockActivity
	for n := from; n <= to; {
		got, err := r.Activity(ctx, seam.Query{From: n, To: to, Tracked: tracked, Pass: "parity"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			t.Fatalf("Activity from %d to %d: no blocks", n, to)
		}
		acts = append(acts, got...)
		n = got[len(got)-1].Block.Number + 1
	}

	type row struct {
		address, holding string
		block            uint64
	}
	stored := make(map[row][]query.Cause)
	for _, a := range addresses {
		for _, c := range statementOf(t, e.db, e.account, a) {
			if c.Block >= from && c.Block <= to {
				stored[row{a, c.Contract, c.Block}] = c.Causes
			}
		}
	}
	viaSeam := make(map[row][]query.Cause)
	storedTxs := make(map[string]query.Transaction)
	seamTxs := make(map[string]query.Transaction)
	for _, a := range acts {
		for _, m := range a.Moves {
			k := row{m.Address, m.Holding, a.Block.Number}
			viaSeam[k] = append(viaSeam[k], query.Cause{Kind: m.Kind, TxHash: m.Tx, Amount: m.Amount, Ref: m.Ref, Fee: m.Fee})
		}
		for _, tx := range a.Txs {
			if tx.Account == nil {
				t.Fatalf("block %d: transaction %s without its Account form", a.Block.Number, tx.Hash)
			}
			seamTxs[tx.Hash] = comparable(*tx.Account)
		}
	}
	for _, a := range addresses {
		txs, err := e.db.Transactions(ctx, chain, a, nil, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range txs {
			if tx.BlockNumber >= from && tx.BlockNumber <= to {
				storedTxs[tx.Hash] = comparable(tx)
			}
		}
	}
	if len(stored) == 0 || len(storedTxs) == 0 {
		t.Fatalf("blocks %d to %d: %d statement rows and %d transactions stored: nothing to compare", from, to, len(stored), len(storedTxs))
	}
	for k, want := range stored {
		if got := viaSeam[k]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s %q block %d: the seam's causes\n%s\nthe stored\n%s", k.address, k.holding, k.block, js(got), js(want))
		}
	}
	for k, got := range viaSeam {
		sum := query.Amount{}
		for _, c := range got {
			sum = sum.Add(c.Amount)
		}
		if _, ok := stored[k]; !ok && !sum.IsZero() { // a balance that did not change has no row
			t.Errorf("%s %q block %d: the seam moves it (%s), nothing stored", k.address, k.holding, k.block, js(got))
		}
	}
	for h, want := range storedTxs {
		if got, ok := seamTxs[h]; !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("transaction %s: the seam's\n%s\nthe stored\n%s", h, js(got), js(want))
		}
	}
	for h := range seamTxs {
		if _, ok := storedTxs[h]; !ok {
			t.Errorf("transaction %s: in the seam's activity, not stored", h)
		}
	}
}

// comparable is tx without what the store adds or spells its own way:
// the chain's name, the tokens' symbols, names and decimals, the block
// time's location.
func comparable(tx query.Transaction) query.Transaction {
	tx.Chain = ""
	tx.BlockTime = tx.BlockTime.UTC()
	tx.Transfers = slices.Clone(tx.Transfers)
	for i := range tx.Transfers {
		tx.Transfers[i].Symbol, tx.Transfers[i].Name, tx.Transfers[i].Decimals = "", "", 0
	}
	if len(tx.Parties) == 0 {
		tx.Parties = nil
	}
	if len(tx.Transfers) == 0 {
		tx.Transfers = nil
	}
	return tx
}

func js(v any) string {
	b, _ := json.MarshalIndent(v, "", " ")
	return string(b)
}
