package fetch_test

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/wharfhq/wharf/internal/testenv/opgeth"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm/devchain"
)

// TestStatementOPGeth books the movements of an OP-stack chain on a real
// op-geth: sends (paying the L2 execution fee, the L1 data fee and the
// operator fee), a contract call with internal value, user deposits that
// mint and move value, a deposit that fails (its mint stays), a deposit
// that creates a contract and a change of the L1 fee parameters. Every
// statement row agrees with the node's balance at its block: 0 wei
// unexplained. Each fee cause lists its components and they add up to
// what the receipt says.
func TestStatementOPGeth(t *testing.T) {
	n := opgeth.New(t, opgeth.Config{})
	ctx := context.Background()
	src, db, key := realNode(t, n.URL)
	f := realNodeFetcher(t, db, src)
	if f.InternalsSource() != query.TraceCallTracer {
		t.Fatalf("trace API %q, want %s", f.InternalsSource(), query.TraceCallTracer)
	}
	milli := func(k int64) *big.Int { return new(big.Int).Mul(big.NewInt(k), big.NewInt(1e15)) }
	mine := func(b opgeth.Block) opgeth.Mined {
		t.Helper()
		m, err := n.Mine(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := n.Accounts[0], n.Accounts[1]
	bob := common.HexToAddress("0x0000000000000000000000000000000000b0b0b0")
	carol := common.HexToAddress("0x0000000000000000000000000000000000c0c0c0")
	bridged := common.HexToAddress("0x00000000000000000000000000000000000d0d0d") // only ever funded by deposits
	deployed := mine(opgeth.Block{Txs: []opgeth.Tx{{From: 1, Data: devchain.InitCode(devchain.ForwarderCode())},
		{From: 1, Data: devchain.InitCode(common.FromHex("0x60006000fd"))}}}) // PUSH1 0 PUSH1 0 REVERT
	contract := func(h common.Hash) common.Address {
		r, err := n.Receipt(ctx, h)
		if err != nil || r["status"] != "0x1" {
			t.Fatalf("deploy: %v %v", r, err)
		}
		return common.HexToAddress(r["contractAddress"].(string))
	}
	fwd, rev := contract(deployed.Txs[1]), contract(deployed.Txs[2])
	subscribed := []common.Address{a, b, bob, carol, bridged, fwd, rev, n.FeeRecipient}
	for _, x := range subscribed {
		if _, err := db.Subscribe(ctx, key.AccountID, chain, strings.ToLower(x.Hex())); err != nil {
			t.Fatal(err)
		}
	}
	catchUpNode(t, f, db, src)

	var sent []common.Hash
	m := mine(opgeth.Block{Txs: []opgeth.Tx{
		{From: 0, To: &bob, Value: milli(11)},                                                                      // a send
		{From: 0, To: &fwd, Value: milli(13), Data: common.LeftPadBytes(carol.Bytes(), 32)},                        // internal value to carol
		{From: 0, To: &rev, Value: milli(1), Gas: 100_000},                                                         // a failed call: its fee only
		{From: 1, To: &a, Value: milli(2), Data: []byte("calldata makes the L1 fee grow, zeros less than others")}, // a send with data
	}})
	sent = append(sent, m.Txs[1:]...)
	m = mine(opgeth.Block{Deposits: []opgeth.Deposit{
		{From: bridged, To: &bob, Mint: milli(50), Value: milli(20), Gas: 100_000},         // mints to its sender, moves value
		{From: bridged, To: &rev, Mint: milli(7), Value: milli(3), Gas: 100_000},           // fails: the mint stays, the value does not move
		{From: a, To: &carol, Mint: milli(5), Value: milli(1), Gas: 100_000},               // a deposit from an account that also sends
		{From: bridged, Data: devchain.InitCode(devchain.ForwarderCode()), Gas: 1_000_000}, // a deposit that creates a contract
	}, Txs: []opgeth.Tx{{From: 0, To: &bob, Value: milli(1)}}}) // a's nonce after its deposit
	sent = append(sent, m.Txs[len(m.Txs)-1])
	if r, _ := n.Receipt(ctx, m.Txs[2]); r["status"] != "0x0" {
		t.Fatalf("the deposit to the reverter: %v, want failed", r)
	}
	fees := n.Fees()
	fees.L1BaseFee = new(big.Int).Mul(fees.L1BaseFee, big.NewInt(3))
	fees.OperatorFeeScalar, fees.OperatorFeeConstant = 4_000_000, 123_456_789
	n.SetFees(fees)
	m = mine(opgeth.Block{Txs: []opgeth.Tx{{From: 0, To: &bob, Value: milli(1)}, {From: 1, To: &carol, Value: milli(1)}}})
	sent = append(sent, m.Txs[1:]...)
	catchUpNode(t, f, db, src)

	addrs := make([]string, len(subscribed))
	for i, x := range subscribed {
		addrs[i] = strings.ToLower(x.Hex())
	}
	kinds := checkStatement(t, db, src, key.AccountID, addrs)
	if got := kinds[strings.ToLower(bridged.Hex())][query.KindMint]; len(got) != 2 {
		t.Errorf("the bridged address's mints: %v, want 2 (the failed deposit's too)", got)
	}
	// A fee cause lists its parts, which add up to it.
	for _, who := range []common.Address{a, b} {
		causes := kinds[strings.ToLower(who.Hex())][query.KindFee]
		if len(causes) == 0 {
			t.Fatalf("%s: no fee in its statement", who.Hex())
		}
		for _, c := range causes {
			if c.Fee == nil || c.Fee.Sum().Neg() != c.Amount || c.Fee.L1.IsZero() || c.Fee.Operator.IsZero() {
				t.Errorf("%s: fee cause %s of %s has parts %+v", who.Hex(), c.TxHash, c.Amount, c.Fee)
			}
		}
	}
	// Each fee is what the receipt says: execution + l1Fee + operator fee.
	for _, h := range sent {
		r, err := n.Receipt(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		num := func(k string) *big.Int {
			v, err := hexutil.DecodeBig(r[k].(string))
			if err != nil {
				t.Fatalf("receipt %s: %v", k, err)
			}
			return v
		}
		var opFees opgeth.Fees
		opFees.OperatorFeeScalar, opFees.OperatorFeeConstant = uint32(num("operatorFeeScalar").Uint64()), num("operatorFeeConstant").Uint64()
		exec := new(big.Int).Mul(num("gasUsed"), num("effectiveGasPrice"))
		op := new(big.Int).Mul(num("gasUsed"), big.NewInt(int64(opFees.OperatorFeeScalar)))
		op.Div(op, big.NewInt(1e6)).Add(op, new(big.Int).SetUint64(opFees.OperatorFeeConstant))
		tx, err := db.Transaction(ctx, chain, strings.ToLower(h.Hex()))
		if err != nil {
			t.Fatal(err)
		}
		want := query.FeeParts{Execution: query.AmountFromBig(exec), L1: query.AmountFromBig(num("l1Fee")), Operator: query.AmountFromBig(op)}
		if tx.FeeParts != want || tx.Fee != want.Sum() {
			t.Errorf("%s: fee %s parts %+v, want %s %+v", h.Hex(), tx.Fee, tx.FeeParts, want.Sum(), want)
		}
	}
}
