package evm_test

import (
	"encoding/json"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/evm/devchain"
	"github.com/wharfhq/wharf/query/evm/devchain/devchaintest"
)

// TestActivityKinds: the EVM's movements through the seam, in both of
// its modes (a pass of few addresses filters its logs by them; one of
// many reads every log): a token transfer's move refers to its log and
// its holding is the token, a withdrawal is a move of the block (no
// transaction) referring to its index and validator, a failed
// transaction moves its fee only, and every transaction's detail holds
// its gas.
func TestActivityKinds(t *testing.T) {
	ctx := t.Context()
	dev := devchaintest.Start(t, devchain.Config{})
	r := evm.NewReader(devchaintest.Dial(t, dev))
	payer := strings.ToLower(dev.Accounts[1].Hex())
	to := fresh()
	if _, err := dev.TransferToken(ctx, 1, common.HexToAddress(to), big.NewInt(1000)); err != nil {
		t.Fatal(err)
	}
	if err := dev.Withdraw(ctx, common.HexToAddress(to), 7); err != nil {
		t.Fatal(err)
	}
	failed, err := dev.FailingTransfer(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	dev.Commit()
	for !dev.Mined(ctx, failed) {
		dev.Commit()
	}
	head, _ := dev.Head()
	token := strings.ToLower(dev.Token.Hex())
	for _, tracked := range []map[string]bool{
		{payer: true, to: true},
		manyTracked(payer, to),
	} {
		acts, err := r.Activity(ctx, chain.Query{From: 1, To: head, Tracked: tracked, Pass: "test"})
		if err != nil {
			t.Fatal(err)
		}
		var moves []chain.Move
		var txs []chain.Tx
		for _, a := range acts {
			moves = append(moves, a.Moves...)
			txs = append(txs, a.Txs...)
		}
		has := func(what string, ok func(chain.Move) bool) {
			t.Helper()
			if !slices.ContainsFunc(moves, ok) {
				t.Errorf("tracking %d addresses: no %s among %+v", len(tracked), what, moves)
			}
		}
		has("token move to the recipient", func(m chain.Move) bool {
			return m.Address == to && m.Holding == token && m.Asset == query.AssetERC20 && m.Kind == query.KindToken &&
				strings.HasPrefix(m.Ref, "log:") && m.Amount.Cmp(query.AmountOf(1000)) == 0
		})
		has("withdrawal", func(m chain.Move) bool {
			return m.Address == to && m.Kind == query.KindWithdrawal && m.Tx == "" && strings.HasPrefix(m.Ref, "withdrawal:") &&
				m.Amount.Cmp(query.AmountOf(7_000_000_000)) == 0
		})
		i := slices.IndexFunc(txs, func(tx chain.Tx) bool { return tx.Hash == strings.ToLower(failed.Hex()) })
		if i < 0 {
			t.Fatalf("tracking %d addresses: the failed transaction is not listed", len(tracked))
		}
		if txs[i].Status != query.StatusFailed {
			t.Errorf("failed transaction: status %q", txs[i].Status)
		}
		for _, m := range moves {
			if m.Tx == txs[i].Hash && m.Kind != query.KindFee {
				t.Errorf("the failed transaction moved %+v", m)
			}
		}
		for _, tx := range txs {
			var d evm.TxDetail
			if err := json.Unmarshal(tx.Detail, &d); err != nil || d.GasUsed == 0 {
				t.Errorf("transaction %s: detail %s: gas used %d, %v", tx.Hash, tx.Detail, d.GasUsed, err)
			}
		}
	}
}

// manyTracked is a set of more addresses than a pass filters its logs by.
func manyTracked(with ...string) map[string]bool {
	set := make(map[string]bool)
	for range 100 {
		set[fresh()] = true
	}
	for _, a := range with {
		set[a] = true
	}
	return set
}
