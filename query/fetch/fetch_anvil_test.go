package fetch_test

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm/devchain"
)

// TestStatementAnvil holds the statements to a second EVM
// implementation, a real anvil: a transaction's value, internal
// transfers through nested calls (from whichever trace API anvil
// answers), a creation with value and a failed transaction's fee, each
// row equal to anvil's balance at its block.
func TestStatementAnvil(t *testing.T) {
	a := testenv.NewAnvil(t)
	ctx := context.Background()
	src, db, key := realNode(t, a.URL)
	f := realNodeFetcher(t, db, src)
	t.Logf("anvil's trace API: %s", f.InternalsSource())
	me := a.Accounts[0]
	send := func(to string, value *big.Int, data []byte) map[string]any {
		t.Helper()
		tx := map[string]any{"from": me, "gas": hexutil.EncodeUint64(2_000_000)}
		if to != "" {
			tx["to"] = to
		}
		if value != nil {
			tx["value"] = hexutil.EncodeBig(value)
		}
		if data != nil {
			tx["data"] = hexutil.Encode(data)
		}
		r, err := a.Send(ctx, tx)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	deploy := func(code []byte, value *big.Int) string {
		t.Helper()
		r := send("", value, code)
		if r["status"] != "0x1" {
			t.Fatalf("deploy: %v", r)
		}
		return r["contractAddress"].(string)
	}
	milli := func(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), big.NewInt(1e15)) }
	fwd := strings.ToLower(deploy(devchain.InitCode(devchain.ForwarderCode()), nil))
	rev := strings.ToLower(deploy(devchain.InitCode(common.FromHex("0x60006000fd")), nil))
	b, c := "0x0000000000000000000000000000000000b0b0b0", "0x0000000000000000000000000000000000c0c0c0"
	all := []string{me, b, c, fwd, rev}
	for _, x := range all {
		if _, err := db.Subscribe(ctx, key.AccountID, chain, x); err != nil {
			t.Fatal(err)
		}
	}
	catchUpNode(t, f, db, src)
	send(b, milli(11), nil)
	send(fwd, milli(13), append(common.LeftPadBytes(common.HexToAddress(fwd).Bytes(), 32), common.LeftPadBytes(common.HexToAddress(c).Bytes(), 32)...))
	if r := send(rev, milli(1), nil); r["status"] != "0x0" {
		t.Fatalf("the call to the reverter did not fail: %v", r)
	}
	created := strings.ToLower(deploy(devchain.InitCode(devchain.ForwarderCode()), milli(7)))
	if _, err := db.Subscribe(ctx, key.AccountID, chain, created); err != nil {
		t.Fatal(err)
	}
	catchUpNode(t, f, db, src)
	kinds := checkStatement(t, db, src, key.AccountID, append(all, created))
	for _, k := range []struct{ who, kind string }{{me, query.KindFee}, {b, query.KindTransaction}, {c, query.KindInternal}} {
		if len(kinds[k.who][k.kind]) == 0 {
			t.Errorf("%s: no %s in its statement: %v", k.who, k.kind, kinds[k.who])
		}
	}
}
