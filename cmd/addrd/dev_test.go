package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestServeDev runs the newcomer's first command, addrd serve --dev: it
// prints the demo accounts and a ready key; a PUT of a demo account has
// its balances within 5 s (issue 5) and its transactions soon after,
// fetched from the dev chain over JSON-RPC by the same code as a node.
func TestServeDev(t *testing.T) {
	srv := startServe(t, "--dev")
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

	if err := srv.stop(); err != nil {
		t.Fatalf("serve after cancel: %v\n%s", err, srv.stderr)
	}
}
