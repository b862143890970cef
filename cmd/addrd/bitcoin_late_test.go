package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/utxo"
)

// TestServeBitcoinLate runs addrd serve on a btcd and a litecoind in
// regtest and subscribes, after they were paid, an address L and a
// descriptor wallet whose receive addresses 1 and 4 were used (4 beyond
// the gap of 3 it starts with): on btcd their past comes from the
// address index, on litecoind from a scan from the start_block their PUTs
// give. L's statement starts at zero with its first payment, each row
// what its block moved, ending at the node's unspent outputs, its
// history from the start given (the genesis on btcd); the wallet derives
// on past index 4 while it is backfilled, its statement and balance its
// payments; an address M given a start_block above its payment shows the
// difference on its statement, not reconciled, instead of hiding it.
func TestServeBitcoinLate(t *testing.T) {
	for _, dialect := range []string{testenv.DialectBtcd, testenv.DialectCore} {
		t.Run(dialect, func(t *testing.T) { testServeBitcoinLate(t, dialect) })
	}
}

func testServeBitcoinLate(t *testing.T, dialect string) {
	r := newRegtest(t, dialect)
	chain := map[string]string{testenv.DialectBtcd: "BTCREGTEST", testenv.DialectCore: "LTCREGTEST"}[dialect]
	lKey, _ := btcec.PrivKeyFromBytes(bytes.Repeat([]byte{3}, 32))
	lScript, l := r.p2wpkh(lKey.PubKey())
	mKey, _ := btcec.PrivKeyFromBytes(bytes.Repeat([]byte{4}, 32))
	_, m := r.p2wpkh(mKey.PubKey())
	_, recv1 := r.p2wpkh(r.key(0, 1).PubKey())
	_, recv4 := r.p2wpkh(r.key(0, 4).PubKey())

	// Block 102: L 1 coin, M 0.1, the wallet's receive address 1 2 coins;
	// block 106: L 0.3, receive address 4 0.7; block 107: L spends its
	// first coin, 0.4 to the payer, 0.5999 back to itself.
	cb := r.coinbase(1)
	tx1 := r.send([]coin{cb}, l, int64(1_0000_0000), m, int64(1000_0000), recv1, int64(2_0000_0000), r.addr, cb.value-3_1000_0000-1000)
	r.node.Generate(t, 4, r.addr)
	cb = r.coinbase(2)
	r.send([]coin{cb}, l, int64(3000_0000), recv4, int64(7000_0000), r.addr, cb.value-1_0000_0000-1000)
	r.node.Generate(t, 1, r.addr)
	r.send([]coin{{txid: tx1, vout: 0, value: 1_0000_0000, key: lKey, script: lScript}}, r.addr, int64(4000_0000), l, int64(5999_0000))
	r.node.Generate(t, 3, r.addr)

	db := filepath.Join(t.TempDir(), "addrd.db")
	out, _, err := run(t, "apikey", "create", "--name", "alice", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	key := lastLine(out)
	s := startServe(t, "--db", db, "--chain", chain+"="+r.node.URL, "--confirmations", "0")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("addrd's log:\n%s", s.stderr)
		}
	})
	node, err := utxo.Open(r.node.URL, r.net)
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	base := "/v1/chains/" + chain
	// On Core the birth heights: L's and the wallet's at or below their
	// first payment, M's above its.
	birth := func(h int) string {
		if dialect == testenv.DialectCore {
			return fmt.Sprintf(`{"start_block":%d}`, h)
		}
		return ""
	}
	if status, body := s.send(t, key, "PUT", base+"/addresses/"+l, birth(102)); status != 200 {
		t.Fatalf("subscribe L: %d %s", status, body)
	}
	if status, body := s.send(t, key, "PUT", base+"/addresses/"+m, `{"start_block":104}`); status != 200 {
		t.Fatalf("subscribe M: %d %s", status, body)
	}
	tpub, err := r.master.Neuter()
	if err != nil {
		t.Fatal(err)
	}
	start := ""
	if dialect == testenv.DialectCore {
		start = `,"start_block":100`
	}
	const wallet = "/wallets/late"
	body := fmt.Sprintf(`{"descriptors":[{"descriptor":"wpkh(%s/0/*)"},{"descriptor":"wpkh(%s/1/*)","internal":true}],"gap_limit":3%s}`, tpub, tpub, start)
	if status, resp := s.send(t, key, "PUT", base+wallet, body); status != 200 {
		t.Fatalf("PUT wallet: %d %s", status, resp)
	}

	var sub struct {
		State        string  `json:"state"`
		HistoryStart *uint64 `json:"history_start_block"`
	}
	eventually(t, 60*time.Second, "L's subscription ACTIVE", func() bool {
		s.get(t, key, base+"/addresses/"+l, &sub)
		return sub.State == query.StateActive
	})
	if want := map[string]uint64{testenv.DialectBtcd: 0, testenv.DialectCore: 102}[dialect]; sub.HistoryStart == nil || *sub.HistoryStart != want {
		t.Errorf("L's history from %v, want block %d", sub.HistoryStart, want)
	}
	var st apiStatement
	s.get(t, key, base+"/addresses/"+l+"/balance_changes", &st)
	type row struct {
		block         uint64
		amount, after string
	}
	var got []row
	for _, x := range st.Rows {
		got = append(got, row{x.Block, x.Amount, x.BalanceAfter})
		if x.Difference != "" && x.Difference != "0" {
			t.Errorf("L's row of block %d: difference %s", x.Block, x.Difference)
		}
	}
	if want := []row{{107, "-40010000", "89990000"}, {106, "30000000", "130000000"}, {102, "100000000", "100000000"}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("L's statement %v, want %v", got, want)
	}
	// The rows end where the node's unspent outputs stand: nothing
	// moved L since its block 107.
	var bal apiBalances
	s.get(t, key, base+"/addresses/"+l+"/balances", &bal)
	nodeBal, err := node.Balances(context.Background(), 109, []query.BalanceQuery{{Address: l}})
	if err != nil || bal.native() != "89990000" || nodeBal[0].Amount.String() != "89990000" {
		t.Errorf("L's balance %s, the node's unspent outputs %v (%v), want 89990000 both", bal.native(), nodeBal, err)
	}

	var w apiWallet
	eventually(t, 60*time.Second, "the wallet derived on past its used receive address 4", func() bool {
		s.get(t, key, base+wallet, &w)
		return w.Used == 2 && w.Descriptors[0].DerivedCount == 8 && w.Descriptors[0].NextIndex == 5
	})
	eventually(t, 60*time.Second, "the wallet's balance", func() bool {
		s.get(t, key, base+wallet+"/balances", &bal)
		return bal.native() == "270000000"
	})
	var ws apiStatement
	s.get(t, key, base+wallet+"/balance_changes", &ws)
	got = nil
	for _, x := range ws.Rows {
		got = append(got, row{x.Block, x.Amount, x.BalanceAfter})
	}
	if want := []row{{106, "70000000", "270000000"}, {102, "200000000", "200000000"}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the wallet's statement %v, want %v", got, want)
	}
	for _, a := range []string{recv1, recv4} {
		eventually(t, 60*time.Second, a+"'s subscription ACTIVE", func() bool {
			s.get(t, key, base+"/addresses/"+a, &sub)
			return sub.State == query.StateActive
		})
	}

	// M's birth height is above its payment: its statement does not
	// start from zero, and says so.
	eventually(t, 60*time.Second, "M's subscription ACTIVE", func() bool {
		s.get(t, key, base+"/addresses/"+m, &sub)
		return sub.State == query.StateActive
	})
	s.get(t, key, base+"/addresses/"+m+"/balance_changes", &st)
	if len(st.Rows) != 1 || st.Rows[0].Difference != "10000000" || st.Rows[0].BalanceAfter != "10000000" ||
		(st.Rows[0].Reconciled != nil && *st.Rows[0].Reconciled) {
		t.Errorf("M's statement %+v, want one row taking the 0.1 received before its start_block as a difference, not reconciled", st.Rows)
	}
}
