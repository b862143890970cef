package opgeth_test

import (
	"context"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/wharfhq/wharf/internal/testenv/opgeth"
)

// TestNode holds the sequencer to what an OP chain is: each block starts
// with the L1-info deposit, a transaction pays an L1 data fee and an
// operator fee from the parameters that deposit stored, a deposit mints
// to its sender, also when it fails, and pays nothing.
func TestNode(t *testing.T) {
	n := opgeth.New(t, opgeth.Config{})
	ctx := context.Background()
	balance := func(a common.Address, block string) *big.Int {
		t.Helper()
		var b hexutil.Big
		if err := n.Call(ctx, &b, "eth_getBalance", a, block); err != nil {
			t.Fatal(err)
		}
		return b.ToInt()
	}
	to := common.HexToAddress("0x00000000000000000000000000000000000b0b0b")
	r := n.Send(t, opgeth.Tx{From: 0, To: &to, Value: big.NewInt(1e15)})
	if r["status"] != "0x1" {
		t.Fatalf("send: %v", r)
	}
	for _, f := range []string{"l1Fee", "l1GasPrice", "l1BlobBaseFee", "l1BaseFeeScalar", "operatorFeeScalar", "operatorFeeConstant"} {
		if v, _ := r[f].(string); v == "" || v == "0x0" {
			t.Errorf("receipt %s = %v, want non-zero", f, r[f])
		}
	}
	block := r["blockNumber"].(string)
	var parent hexutil.Uint64
	parent.UnmarshalText([]byte(block))
	before, after := balance(n.Accounts[0], hexutil.EncodeUint64(uint64(parent)-1)), balance(n.Accounts[0], block)
	gasUsed, _ := hexutil.DecodeBig(r["gasUsed"].(string))
	price, _ := hexutil.DecodeBig(r["effectiveGasPrice"].(string))
	l1Fee, _ := hexutil.DecodeBig(r["l1Fee"].(string))
	fees := n.Fees()
	operator := new(big.Int).Mul(gasUsed, big.NewInt(int64(fees.OperatorFeeScalar)))
	operator.Div(operator, big.NewInt(1e6)).Add(operator, new(big.Int).SetUint64(fees.OperatorFeeConstant))
	paid := new(big.Int).Sub(before, after)
	want := new(big.Int).Add(big.NewInt(1e15), new(big.Int).Mul(gasUsed, price))
	want.Add(want, l1Fee).Add(want, operator)
	if paid.Cmp(want) != 0 {
		t.Errorf("the sender paid %s, want value + execution + l1Fee + operator fee = %s", paid, want)
	}

	// A deposit to a contract that reverts: it fails, the mint stays.
	m, err := n.Mine(ctx, opgeth.Block{Txs: []opgeth.Tx{{From: 1, Data: []byte{0x60, 0x05, 0x60, 0x0c, 0x60, 0x00, 0x39, 0x60, 0x05, 0x60, 0x00, 0xf3, 0x60, 0x00, 0x60, 0x00, 0xfd}}}})
	if err != nil {
		t.Fatal(err)
	}
	cr, err := n.Receipt(ctx, m.Txs[1])
	if err != nil || cr["status"] != "0x1" {
		t.Fatalf("deploy: %v %v", cr, err)
	}
	rev := common.HexToAddress(cr["contractAddress"].(string))
	depositor := common.HexToAddress("0x00000000000000000000000000000000000d0d0d")
	d := n.Deposit(t, opgeth.Deposit{From: depositor, To: &rev, Mint: big.NewInt(5e15), Value: big.NewInt(1e15), Gas: 100_000})
	if d["status"] != "0x0" {
		t.Fatalf("deposit to the reverter: %v, want failed", d)
	}
	if got := balance(depositor, "latest"); got.Cmp(big.NewInt(5e15)) != 0 {
		t.Errorf("failed deposit: the sender holds %s, want the mint 5e15", got)
	}
	d = n.Deposit(t, opgeth.Deposit{From: depositor, To: &to, Mint: big.NewInt(2e15), Value: big.NewInt(3e15), Gas: 100_000})
	if d["status"] != "0x1" {
		t.Fatalf("deposit: %v", d)
	}
	if got := balance(depositor, "latest"); got.Cmp(big.NewInt(4e15)) != 0 {
		t.Errorf("deposit: the sender holds %s, want 5e15 + 2e15 - 3e15", got)
	}
	var info map[string]any
	if err := n.Call(ctx, &info, "eth_getTransactionByBlockNumberAndIndex", d["blockNumber"], "0x0"); err != nil {
		t.Fatal(err)
	}
	if info["type"] != "0x7e" || info["from"] != "0xdeaddeaddeaddeaddeaddeaddeaddeaddead0001" {
		t.Errorf("first transaction: %v, want the L1-info deposit", info)
	}
}
