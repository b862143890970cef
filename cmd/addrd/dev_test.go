package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeDev runs the newcomer's first command, addrd serve --dev: it
// prints the demo accounts and a ready key; a PUT of a demo account has
// its balances within 5 s (issue 5) and its transactions soon after,
// fetched from the dev chain over JSON-RPC by the same code as a node.
func TestServeDev(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stdout := &lines{ch: make(chan string, 64)}
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- newApp(stdout, &stderr).RunContext(ctx, []string{"addrd", "serve", "--dev", "--listen", "127.0.0.1:0"})
	}()
	var accounts []string
	var key, base string
	for base == "" {
		select {
		case line := <-stdout.ch:
			switch {
			case strings.HasPrefix(line, "dev account "):
				accounts = append(accounts, strings.TrimPrefix(line, "dev account "))
			case strings.HasPrefix(line, "dev api key "):
				key = strings.TrimPrefix(line, "dev api key ")
			case strings.HasPrefix(line, "addrd listening on "):
				base = strings.TrimPrefix(line, "addrd listening on ")
			}
		case err := <-done:
			t.Fatalf("serve --dev ended: %v\n%s", err, stderr.String())
		case <-time.After(60 * time.Second):
			t.Fatalf("serve --dev printed no listening line in 60 s\n%s", stderr.String())
		}
	}
	if len(accounts) != 4 || key == "" {
		t.Fatalf("accounts %v, key %q", accounts, key)
	}
	id, secret, _ := strings.Cut(key, ":")
	do := func(method, path string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		req.SetBasicAuth(id, secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
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
				t.Fatalf("%s not within %s: %d %s\n%s", what, deadline, status, body, stderr.String())
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

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve after cancel: %v\n%s", err, stderr.String())
	}
}
