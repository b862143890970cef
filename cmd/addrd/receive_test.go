package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/wharfhq/wharf/internal/testenv"
)

// TestServeDevHearAboutIt is the README's "hear about it" step on addrd
// serve --dev: a webhook to a local receiver (addrd receive's handler,
// checking signatures with the reference library) gets the dev account's
// statement rows as the fetcher stores them, and GET /v1/events lists
// the same events, with a long poll for the next.
func TestServeDevHearAboutIt(t *testing.T) {
	srv := startServe(t, "--dev")
	accounts, keys := srv.printed("dev account "), srv.printed("dev api key ")
	key, account := keys[0], strings.ToLower(accounts[0])
	send := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.base+path, strings.NewReader(body))
		id, secret, _ := strings.Cut(key, ":")
		req.SetBasicAuth(id, secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, []byte(b.String())
	}
	out := &testenv.Buffer{}
	var handler atomic.Pointer[http.Handler] // set once the secret is known
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := handler.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		http.Error(w, "not yet", http.StatusServiceUnavailable)
	}))
	defer recv.Close()
	status, body := send("POST", "/v1/webhooks", `{"url":"`+recv.URL+`/hook","kinds":["balance_change"]}`)
	var hook struct{ ID, Secret string }
	if json.Unmarshal(body, &hook); status != 200 || !strings.HasPrefix(hook.Secret, "whsec_") {
		t.Fatalf("POST /v1/webhooks: %d %s", status, body)
	}
	wh, _ := standardwebhooks.NewWebhook(hook.Secret)
	h := receiver(wh, out)
	handler.Store(&h)
	if status, body := send("PUT", "/v1/chains/ETH/addresses/"+account, ""); status != 200 {
		t.Fatalf("PUT: %d %s", status, body)
	}
	start := time.Now()
	for !strings.Contains(out.String(), "balance_change ETH "+account+" block ") {
		if strings.Contains(out.String(), "refused") || time.Since(start) > 60*time.Second {
			t.Fatalf("the receiver printed %q in %s\n%s", out, time.Since(start), srv.stderr)
		}
		time.Sleep(50 * time.Millisecond) // polling an outcome, not ordering goroutines
	}
	t.Logf("subscribe to the first delivery: %s", time.Since(start))
	status, body = send("GET", "/v1/events?kind=balance_change&page_size=1000", "")
	var feed struct {
		Events []struct {
			ID string
		}
		NextCursor string `json:"next_cursor"`
	}
	if json.Unmarshal(body, &feed); status != 200 || len(feed.Events) == 0 || !strings.Contains(out.String(), feed.Events[0].ID+" ") {
		t.Fatalf("GET /v1/events: %d %s\nreceived %s", status, body, out)
	}
	status, body = send("GET", "/v1/events?kind=balance_change&wait_seconds=20&after="+feed.NextCursor, "")
	if json.Unmarshal(body, &feed); status != 200 || len(feed.Events) == 0 {
		t.Fatalf("long poll: %d %s", status, body)
	}
}
