package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
)

// TestStartBlock: a UTXO chain's address PUT takes start_block, the
// address's birth height, which the fetcher's sync then reads (the
// lowest given while the address awaits it); anything but a block number,
// or start_block on an EVM chain, is 400 naming the rule; a wallet's PUT
// takes it for its addresses and answers it.
func TestStartBlock(t *testing.T) {
	for _, db := range testenv.DBs() {
		t.Run(db.Name, func(t *testing.T) { testStartBlock(t, walletEnv(t, db.DSN(t))) })
	}
}

func testStartBlock(t *testing.T, e *env) {
	ctx := context.Background()
	const addr = "bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080"
	path := "/v1/chains/BTCREGTEST/addresses/" + addr
	for _, c := range []struct{ name, body, rule string }{
		{"Negative", `{"start_block":-1}`, "a start height is a block number"},
		{"Fraction", `{"start_block":1.5}`, "a start height is a block number"},
		{"Exponent", `{"start_block":1e3}`, "a start height is a block number"},
		{"String", `{"start_block":"100"}`, "a start height is a block number"},
		{"LeadingZero", `{"start_block":0100}`, "one JSON object"},
		{"TooLarge", `{"start_block":9223372036854775808}`, "a start height is a block number"},
		{"Unknown", `{"start_height":100}`, "one JSON object with start_block"},
		{"NotObject", `[100]`, "one JSON object with start_block"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.send("PUT", path, c.body, e.alice)
			e.want(r, 400, 3)
			if !strings.Contains(string(r.body), c.rule) {
				t.Fatalf("body %s, want the rule %q", r.body, c.rule)
			}
		})
	}
	t.Run("EVM", func(t *testing.T) {
		r := e.send("PUT", "/v1/chains/ETH/addresses/0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed", `{"start_block":100}`, e.alice)
		e.want(r, 400, 3)
		if !strings.Contains(string(r.body), "start_block is a birth height, taken on chains whose balances are their outputs") {
			t.Fatalf("body %s", r.body)
		}
		// Without it an EVM PUT is as it was, a body or none.
		e.want(e.send("PUT", "/v1/chains/ETH/addresses/0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed", "", e.alice), 200, 0)
	})
	t.Run("OK", func(t *testing.T) {
		e.want(e.send("PUT", path, `{"start_block":500}`, e.alice), 200, 0)
		e.want(e.send("PUT", path, `{"start_block":120}`, e.bob), 200, 0)
		e.want(e.send("PUT", path, `{"start_block":300}`, e.alice), 200, 0)
		e.want(e.send("PUT", path, `{}`, e.alice), 200, 0)
		tracked, err := e.db.Tracked(ctx, "BTCREGTEST")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, tr := range tracked {
			if tr.Address == addr {
				found = true
				if !tr.NeedsSync || !tr.Born || tr.StartBlock != 120 {
					t.Fatalf("tracked %+v, want owed a sync from the lowest start given, 120", tr)
				}
			}
		}
		if !found {
			t.Fatalf("%s is not tracked: %+v", addr, tracked)
		}
	})
	t.Run("Wallet", func(t *testing.T) {
		const wpath = "/v1/chains/BTCREGTEST/wallets/born"
		body := `{"descriptors":[{"descriptor":"wpkh([d34db33f/84h/1h/0h]` + regtestTpub + `/0/*)"}],"gap_limit":2,"start_block":7}`
		r := e.send("PUT", wpath, body, e.alice)
		e.want(r, 200, 0)
		if m := r.json(t); m["start_block"] != float64(7) {
			t.Fatalf("wallet %s, want start_block 7", r.body)
		}
		e.want(e.send("PUT", wpath, body, e.alice), 200, 0)
		e.want(e.send("PUT", wpath, strings.Replace(body, `"start_block":7`, `"start_block":8`, 1), e.alice), 409, 6)
		r = e.send("PUT", "/v1/chains/BTCREGTEST/wallets/bad", strings.Replace(body, `7`, `-7`, 1), e.alice)
		e.want(r, 400, 3)
		tracked, err := e.db.Tracked(ctx, "BTCREGTEST")
		if err != nil {
			t.Fatal(err)
		}
		born := 0
		for _, tr := range tracked {
			if tr.Address != addr && tr.Born && tr.StartBlock == 7 {
				born++
			}
		}
		if born != 2 {
			t.Fatalf("%d of the wallet's 2 addresses owed a sync from block 7: %+v", born, tracked)
		}
	})
}
