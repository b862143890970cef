package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestServeDev runs the newcomer's first command, addrd serve --dev: it
// prints the demo accounts and a ready key; a PUT of a demo account has
// its balances within 5 s and its transactions soon after,
// fetched from the dev chain over JSON-RPC by the same code as a node.
func TestServeDev(t *testing.T) {
	srv := startServe(t, "--dev")
	srv.checkOpenAPI(t)
	accounts, keys := srv.printed("dev account "), srv.printed("dev api key ")
	if len(accounts) != 4 || len(keys) != 1 {
		t.Fatalf("accounts %v, keys %q", accounts, keys)
	}
	do := func(method, path string) (int, []byte) {
		t.Helper()
		return srv.do(t, keys[0], method, path)
	}
	account := accounts[0]
	low := strings.ToLower(account)
	if status, body := do("PUT", "/v1/chains/ETH/addresses/"+account); status != 200 {
		t.Fatalf("PUT: %d %s", status, body)
	}
	put := time.Now()

	// The fetcher runs on its own clock here: wait for what it stores,
	// polling the API with a deadline that is the promise under test.
	poll := func(what, path string, deadline time.Duration, ok func([]byte) bool) time.Duration {
		t.Helper()
		for {
			status, body := do("GET", path)
			if status == 200 && ok(body) {
				return time.Since(put)
			}
			if time.Since(put) > deadline {
				t.Fatalf("%s not within %s: %d %s\n%s", what, deadline, status, body, srv.stderr)
			}
			time.Sleep(50 * time.Millisecond) // polling an outcome, not ordering goroutines
		}
	}
	took := poll("balances", "/v1/chains/ETH/addresses/"+low+"/balances", 5*time.Second, func(b []byte) bool {
		var r struct {
			Balances []struct{ Asset, Amount string }
		}
		return json.Unmarshal(b, &r) == nil && len(r.Balances) == 2
	})
	t.Logf("PUT to balances: %s", took)
	took = poll("transactions", "/v1/chains/ETH/addresses/"+low+"/transactions?page_size=1", 30*time.Second, func(b []byte) bool {
		var r struct {
			Transactions  []struct{ Hash string }
			NextPageToken string `json:"next_page_token"`
		}
		return json.Unmarshal(b, &r) == nil && len(r.Transactions) == 1 && r.NextPageToken != ""
	})
	t.Logf("PUT to two pages of transactions: %s", took)

	// Every kind of movement shows in the statements of the demo
	// accounts, the fee recipient and the demo contracts (a cycle of the
	// showcase is five blocks); the factory's balance does not change (it
	// passes the value on), so its creations show in its transactions.
	contracts := srv.printed("dev contracts: forwarder ")
	if len(contracts) != 1 {
		t.Fatalf("dev contracts line: %q", contracts)
	}
	var forwarder, destructor, factory string
	if _, err := fmt.Sscanf(strings.ReplaceAll(contracts[0], ",", ""), "%s destructor %s factory %s", &forwarder, &destructor, &factory); err != nil {
		t.Fatalf("dev contracts line %q: %v", contracts[0], err)
	}
	watched := append(append([]string{}, accounts...), srv.printed("dev fee recipient ")[0], forwarder, destructor)
	for _, a := range watched {
		if status, body := do("PUT", "/v1/chains/ETH/addresses/"+a); status != 200 {
			t.Fatalf("PUT %s: %d %s", a, status, body)
		}
	}
	if status, body := do("PUT", "/v1/chains/ETH/addresses/"+factory); status != 200 {
		t.Fatalf("PUT %s: %d %s", factory, status, body)
	}
	put = time.Now()
	want := []string{"transaction", "fee", "token", "internal", "withdrawal", "fee_income", "selfdestruct"}
	seen := make(map[string]bool)
	poll("every kind of movement in the statements", "/v1/chains/ETH/addresses/"+strings.ToLower(factory)+"/transactions", 60*time.Second, func(b []byte) bool {
		for _, a := range watched {
			_, body := do("GET", "/v1/chains/ETH/addresses/"+strings.ToLower(a)+"/balance_changes?page_size=1000")
			var r struct {
				BalanceChanges []struct {
					Reconciled *bool // null: not compared with the node at its block
					Traced     bool
					Causes     []struct{ Kind string }
				} `json:"balance_changes"`
			}
			if err := json.Unmarshal(body, &r); err != nil {
				t.Fatalf("balance_changes of %s: %v %s", a, err, body)
			}
			for _, row := range r.BalanceChanges {
				if (row.Reconciled != nil && !*row.Reconciled) || !row.Traced {
					t.Fatalf("a row of %s is not reconciled or not traced: %s", a, body)
				}
				for _, c := range row.Causes {
					seen[c.Kind] = true
				}
			}
		}
		if strings.Contains(string(b), `"kind":"creation"`) {
			seen["creation"] = true
		}
		for _, k := range append(want, "creation") {
			if !seen[k] {
				return false
			}
		}
		return true
	})
	t.Logf("kinds seen: %v", seen)

	if err := srv.stop(); err != nil {
		t.Fatalf("serve after cancel: %v\n%s", err, srv.stderr)
	}
}
