package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"

	"github.com/wharfhq/wharf/internal/testenv"
)

// TestServeCoinbaseMaturity mines to a descriptor wallet's first receive
// address, tracked from before its first block, on btcd and litecoind:
// its balance and the wallet's are split into spendable and immature,
// every coinbase immature until it has 100 confirmations, and the split
// moves at the block where the node starts to accept a spend of the
// first coinbase (refused one block before).
func TestServeCoinbaseMaturity(t *testing.T) {
	for _, dialect := range []string{testenv.DialectBtcd, testenv.DialectCore} {
		t.Run(dialect, func(t *testing.T) { testServeCoinbaseMaturity(t, dialect) })
	}
}

type apiSplit struct {
	Balances []struct {
		Asset     string `json:"asset"`
		Amount    string `json:"amount"`
		Spendable string `json:"spendable"`
		Immature  string `json:"immature"`
		Block     uint64 `json:"block_number"`
	} `json:"balances"`
}

func (b apiSplit) String() string {
	if len(b.Balances) != 1 {
		return fmt.Sprintf("%d balances", len(b.Balances))
	}
	x := b.Balances[0]
	return fmt.Sprintf("amount %s spendable %s immature %s at %d", x.Amount, x.Spendable, x.Immature, x.Block)
}

func testServeCoinbaseMaturity(t *testing.T, dialect string) {
	ctx := context.Background()
	// The payer, whom the node mines to, is the wallet's receive address 0.
	r := regtestKeys(t, dialect, func(r *regtest) *btcec.PrivateKey { return r.key(0, 0) })
	r.start(0)
	chain := map[string]string{testenv.DialectBtcd: "BTCREGTEST", testenv.DialectCore: "LTCREGTEST"}[dialect]
	db := filepath.Join(t.TempDir(), "addrd.db")
	out, _, err := run(t, "apikey", "create", "--name", "alice", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	key := lastLine(out)
	s := startServe(t, "--db", db, "--chain", chain+"="+r.node.URL, "--confirmations", "0")
	s.checkOpenAPI(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("addrd's log:\n%s", s.stderr)
		}
	})
	base := "/v1/chains/" + chain
	tpub, err := r.master.Neuter()
	if err != nil {
		t.Fatal(err)
	}
	const wallet = "/wallets/miner"
	if status, resp := s.send(t, key, "PUT", base+wallet, fmt.Sprintf(`{"descriptors":[{"descriptor":"wpkh(%s/0/*)"}],"gap_limit":3}`, tpub)); status != 200 {
		t.Fatalf("PUT wallet: %d %s", status, resp)
	}
	if status, body := s.do(t, key, "PUT", base+"/addresses/"+r.addr); status != 200 {
		t.Fatalf("subscribe %s: %d %s", r.addr, status, body)
	}

	const reward = 50_0000_0000
	// want waits for the address's and the wallet's balances at block
	// tip: amount, spendable and immature.
	want := func(tip uint64, spendable, immature int64) {
		t.Helper()
		w := fmt.Sprintf("amount %d spendable %d immature %d at %d", spendable+immature, spendable, immature, tip)
		for _, path := range []string{base + "/addresses/" + r.addr + "/balances", base + wallet + "/balances"} {
			var got apiSplit
			eventually(t, 60*time.Second, path+": "+w, func() bool {
				s.get(t, key, path, &got)
				return got.String() == w
			})
		}
	}
	r.node.Generate(t, 1, r.addr)
	want(1, 0, reward)
	r.node.Generate(t, 98, r.addr)
	want(99, 0, 99*reward)

	// The node refuses a spend of block 1's coinbase in block 100 and
	// takes it for block 101.
	cb := r.coinbase(1)
	spend := r.sign([]coin{cb}, r.addr, int64(cb.value-1000))
	var txid string
	// btcd: "before required maturity of 100 blocks"; Core:
	// bad-txns-premature-spend-of-coinbase.
	if err := r.node.Call(ctx, &txid, "sendrawtransaction", spend); err == nil || !strings.Contains(err.Error(), "maturity") &&
		!strings.Contains(err.Error(), "premature") {
		t.Errorf("the node took a spend of block 1's coinbase at tip 99: %v", err)
	}
	r.node.Generate(t, 1, r.addr)
	want(100, reward, 99*reward)
	if err := r.node.Call(ctx, &txid, "sendrawtransaction", spend); err != nil {
		t.Errorf("the node refused a spend of block 1's coinbase at tip 100: %v", err)
	}
	// The as-of read splits as of its block.
	var at apiSplit
	s.get(t, key, base+"/addresses/"+r.addr+"/balances?block_number=99", &at)
	if got, w := at.String(), fmt.Sprintf("amount %d spendable 0 immature %d at 99", 99*reward, 99*reward); got != w {
		t.Errorf("balances as of block 99: %s, want %s", got, w)
	}

	// The coinbase's transaction says when it is spendable.
	var tx struct {
		Coinbase      bool   `json:"coinbase"`
		SpendableFrom uint64 `json:"spendable_from"`
		VSize         int    `json:"vsize"`
		Weight        int    `json:"weight"`
	}
	s.get(t, key, base+"/transactions/"+cb.txid, &tx)
	if !tx.Coinbase || tx.SpendableFrom != 101 || tx.VSize == 0 || tx.Weight < 4*tx.VSize-3 || tx.Weight > 4*tx.VSize {
		t.Errorf("block 1's coinbase %+v, want coinbase, spendable_from 101, its weight 4 × vsize", tx)
	}
}
