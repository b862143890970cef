package fetch_test

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm/devchain"
)

// TestStatementGeth sends every kind of movement on a real geth --dev
// node (internal transfers through nested calls, a reverted inner call
// with value, CREATE2 with value, a creating transaction with value, a
// self-destruct, a failed transaction's fee, a token transfer, a
// self-transfer, a withdrawal, fee income) and holds the statements of
// every address involved to the node's eth_getBalance and balanceOf at
// each stored block: every movement listed, rows chained, 0 wei
// unexplained.
func TestStatementGeth(t *testing.T) {
	g := testenv.NewGeth(t)
	ctx := context.Background()
	src, db, key := realNode(t, g.URL)
	f := realNodeFetcher(t, db, src)
	if f.InternalsSource() != query.TraceCallTracer {
		t.Fatalf("trace API %q, want %s", f.InternalsSource(), query.TraceCallTracer)
	}

	me := common.HexToAddress(g.Account)
	eth1 := func(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), big.NewInt(1e15)) } // milliether
	send := func(to *common.Address, value *big.Int, data []byte) map[string]any {
		t.Helper()
		if to == nil {
			return g.Transact(t, "", value, data, 2_000_000)
		}
		return g.Transact(t, to.Hex(), value, data, 2_000_000)
	}
	deploy := func(code []byte, value *big.Int) common.Address {
		t.Helper()
		r := send(nil, value, code)
		if r["status"] != "0x1" {
			t.Fatalf("deploy: %v", r)
		}
		return common.HexToAddress(r["contractAddress"].(string))
	}
	fwd := deploy(devchain.InitCode(devchain.ForwarderCode()), nil)
	des := deploy(devchain.InitCode(devchain.DestructorCode()), nil)
	fac := deploy(devchain.InitCode(devchain.FactoryCode()), nil)
	rev := deploy(devchain.InitCode(common.FromHex("0x60006000fd")), nil) // PUSH1 0 PUSH1 0 REVERT
	tokenCode, err := devchain.DemoTokenCode(eth1(1_000_000))
	if err != nil {
		t.Fatal(err)
	}
	token := deploy(tokenCode, nil)
	b := common.HexToAddress("0x0000000000000000000000000000000000b0b0b0")
	c := common.HexToAddress("0x0000000000000000000000000000000000c0c0c0")
	fee := common.HexToAddress("0x0000000000000000000000000000000000fee000")
	if err := g.Call(ctx, nil, "dev_setFeeRecipient", fee.Hex()); err != nil {
		t.Fatal(err)
	}
	childCode := append(devchain.InitCode(devchain.DestructorCode()), 0x01)
	child := crypto.CreateAddress2(fac, common.Hash{}, crypto.Keccak256(childCode))
	// The pending nonce is the one eth_sendTransaction gives next: the
	// latest block's state could lag the receipt of the last deployment
	// (the prediction was off once in CI).
	var nonce hexutil.Uint64
	if err := g.Call(ctx, &nonce, "eth_getTransactionCount", g.Account, "pending"); err != nil {
		t.Fatal(err)
	}
	// The transactions below before the creating one: see its nonce.
	const before = 9
	deployed := crypto.CreateAddress(me, uint64(nonce)+before)
	all := []common.Address{me, b, c, fee, fwd, des, fac, rev, token, child, deployed}
	for _, a := range all {
		if _, err := db.Subscribe(ctx, key.AccountID, chain, strings.ToLower(a.Hex())); err != nil {
			t.Fatal(err)
		}
	}
	catchUpNode(t, f, db, src)

	transfer, err := devchain.DemoTokenTransfer(b, eth1(5))
	if err != nil {
		t.Fatal(err)
	}
	hop := func(addrs ...common.Address) []byte {
		var data []byte
		for _, a := range addrs {
			data = append(data, common.LeftPadBytes(a.Bytes(), 32)...)
		}
		return data
	}
	send(&b, eth1(11), nil)                                  // 1 a transaction's value
	send(&me, eth1(3), nil)                                  // 2 a self-transfer
	send(&token, nil, transfer)                              // 3 a token transfer
	send(&fwd, eth1(13), hop(fwd, c))                        // 4 internal, nested
	send(&fwd, eth1(17), hop(rev))                           // 5 the inner call reverts: the value stays in the forwarder
	send(&des, eth1(19), nil)                                // 6 fund the destructor
	send(&des, nil, hop(c))                                  // 7 self-destruct to c
	send(&fac, eth1(23), childCode)                          // 8 CREATE2 with value
	if r := send(&rev, eth1(1), nil); r["status"] != "0x0" { // 9 a failed transaction: its fee only
		t.Fatalf("the call to the reverter did not fail: %v", r)
	}
	if got := deploy(devchain.InitCode(devchain.DestructorCode()), eth1(29)); got != deployed { // a creating transaction with value
		t.Fatalf("deployed at %s, predicted %s", got.Hex(), deployed.Hex())
	}
	w := map[string]any{"index": "0x0", "validatorIndex": "0x0", "address": b.Hex(), "amount": hexutil.EncodeUint64(31_000_000)}
	if err := g.Call(ctx, nil, "dev_addWithdrawal", w); err != nil {
		t.Fatal(err)
	}
	send(&c, eth1(1), nil) // a block after the withdrawal's, at the latest
	catchUpNode(t, f, db, src)

	addrs := make([]string, len(all))
	for i, a := range all {
		addrs[i] = strings.ToLower(a.Hex())
	}
	kinds := checkStatement(t, db, src, key.AccountID, addrs)
	for _, k := range []struct {
		who  common.Address
		kind string
	}{
		{me, query.KindTransaction}, {b, query.KindTransaction}, {me, query.KindFee}, {b, query.KindToken},
		{c, query.KindInternal}, {c, query.KindSelfdestruct}, {des, query.KindSelfdestruct},
		{child, query.KindCreation}, {deployed, query.KindCreation}, {b, query.KindWithdrawal}, {fee, query.KindFeeIncome},
	} {
		if len(kinds[strings.ToLower(k.who.Hex())][k.kind]) == 0 {
			t.Errorf("%s: no %s in its statement: %v", k.who.Hex(), k.kind, kinds[strings.ToLower(k.who.Hex())])
		}
	}
	// The reverted inner call moved nothing: the reverter's statement is
	// empty and the forwarder keeps the 17 (the nested payout passed
	// through it: no change).
	if got := kinds[strings.ToLower(rev.Hex())]; len(got) != 0 {
		t.Errorf("the reverter's statement: %v, want none", got)
	}
	if got := kinds[strings.ToLower(fwd.Hex())]; len(got) != 1 || len(got[query.KindTransaction]) != 1 || got[query.KindTransaction][0].Amount != query.AmountFromBig(eth1(17)) {
		t.Errorf("the forwarder's statement: %v, want the 17 it kept", got)
	}
	if len(kinds[strings.ToLower(token.Hex())]) != 0 {
		t.Errorf("the token's own statement: %v, want none", kinds[strings.ToLower(token.Hex())])
	}
}
