package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/webhook"
)

// send sends a request with a JSON body as k.
func (e *env) send(method, path, body string, k key) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.SetBasicAuth(k.id, k.secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, b}
}

func hookEnv(t *testing.T, dsn string, policy webhook.Policy) *env {
	return newEnvWith(t, dsn, func(c *api.Config) {
		c.Webhooks = webhook.New(webhook.Config{Store: c.Store.(webhook.Store), Policy: policy})
	}, store.WithMaxWebhooks(3))
}

func TestWebhooks(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, d string) {
		var (
			mu     sync.Mutex
			got    []http.Header
			bodies [][]byte
		)
		recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			got, bodies = append(got, r.Header.Clone()), append(bodies, b)
			mu.Unlock()
			w.Write([]byte("ok"))
		}))
		defer recv.Close()
		e := hookEnv(t, d, webhook.Policy{AllowHTTP: true, AllowPrivate: true})

		r := e.send("POST", "/v1/webhooks", `{"url":"`+recv.URL+`","description":"treasury","address":"`+addrA+`","kinds":["balance_change"]}`, e.alice)
		e.want(r, 200, 0)
		var h struct {
			ID, Secret, State, Cursor, Address string
			Kinds                              []string
		}
		json.Unmarshal(r.body, &h)
		if !strings.HasPrefix(h.ID, "wh_") || !strings.HasPrefix(h.Secret, "whsec_") || h.State != "ACTIVE" || h.Address != addrA || len(h.Kinds) != 1 {
			t.Fatalf("created %s", r.body)
		}
		// Secrets are shown on create and rotate only.
		r = e.do("GET", "/v1/webhooks/"+h.ID, e.alice)
		e.want(r, 200, 0)
		if !strings.Contains(string(r.body), `"secret":""`) {
			t.Fatalf("GET shows the secret: %s", r.body)
		}
		e.want(e.do("GET", "/v1/webhooks/"+h.ID, e.bob), 404, 5)
		if r = e.do("GET", "/v1/webhooks", e.alice); !strings.Contains(string(r.body), h.ID) {
			t.Fatalf("list %s", r.body)
		}
		if r = e.do("GET", "/v1/webhooks", e.bob); string(r.body) != `{"webhooks":[]}`+"\n" {
			t.Fatalf("bob's list %s", r.body)
		}

		// The test event, signed with the secret.
		r = e.send("POST", "/v1/webhooks/"+h.ID+"/test", "", e.alice)
		e.want(r, 200, 0)
		if mu.Lock(); len(got) != 1 || !strings.Contains(string(r.body), `"status":200`) {
			t.Fatalf("test: %s, %d requests", r.body, len(got))
		}
		mu.Unlock()
		verify := func(i int, secret string) error {
			mu.Lock()
			defer mu.Unlock()
			wh, _ := standardwebhooks.NewWebhook(secret)
			return wh.Verify(bodies[i], got[i])
		}
		if err := verify(0, h.Secret); err != nil {
			t.Fatalf("test event: %v", err)
		}
		if mu.Lock(); !bytes.Contains(bodies[0], []byte(`"type":"test"`)) {
			t.Fatalf("test event %s", bodies[0])
		}
		mu.Unlock()
		// Rotation: the next delivery carries both signatures.
		r = e.send("POST", "/v1/webhooks/"+h.ID+"/rotate_secret", "", e.alice)
		e.want(r, 200, 0)
		var rot struct{ Secret string }
		json.Unmarshal(r.body, &rot)
		if rot.Secret == h.Secret || !strings.HasPrefix(rot.Secret, "whsec_") {
			t.Fatalf("rotated %s", r.body)
		}
		e.want(e.send("POST", "/v1/webhooks/"+h.ID+"/test", "", e.alice), 200, 0)
		if verify(1, h.Secret) != nil || verify(1, rot.Secret) != nil {
			t.Fatal("after rotation, a delivery does not verify with both secrets")
		}
		// The log, newest first, paged.
		r = e.do("GET", "/v1/webhooks/"+h.ID+"/deliveries?page_size=1", e.alice)
		e.want(r, 200, 0)
		var page struct {
			Deliveries    []map[string]any
			NextPageToken string `json:"next_page_token"`
		}
		json.Unmarshal(r.body, &page)
		if len(page.Deliveries) != 1 || page.NextPageToken == "" || page.Deliveries[0]["event_type"] != "test" {
			t.Fatalf("log page %s", r.body)
		}
		r = e.do("GET", "/v1/webhooks/"+h.ID+"/deliveries?page_token="+page.NextPageToken, e.alice)
		json.Unmarshal(r.body, &page)
		if len(page.Deliveries) != 1 || page.NextPageToken != "" {
			t.Fatalf("log page 2 %s", r.body)
		}
		e.want(e.do("GET", "/v1/webhooks/"+h.ID+"/deliveries?page_token=x", e.alice), 400, 3)

		// Update, disable, enable, replay.
		r = e.send("PATCH", "/v1/webhooks/"+h.ID, `{"enabled":false,"kinds":[]}`, e.alice)
		e.want(r, 200, 0)
		if !strings.Contains(string(r.body), `"state":"DISABLED"`) || !strings.Contains(string(r.body), `"kinds":[]`) {
			t.Fatalf("disabled %s", r.body)
		}
		r = e.send("PATCH", "/v1/webhooks/"+h.ID, `{"enabled":true,"after":"`+h.Cursor+`"}`, e.alice)
		e.want(r, 200, 0)
		if !strings.Contains(string(r.body), `"state":"ACTIVE"`) || !strings.Contains(string(r.body), `"cursor":"`+h.Cursor+`"`) {
			t.Fatalf("enabled %s", r.body)
		}
		bobCursor := e.feed(e.bob, "").NextCursor
		e.want(e.send("PATCH", "/v1/webhooks/"+h.ID, `{"after":"`+bobCursor+`"}`, e.alice), 400, 3)

		// Bad input.
		for _, body := range []string{``, `{}`, `{"url":"ftp://x"}`, `{"url":"` + recv.URL + `","nope":1}`, `{"url":"` + recv.URL + `","kinds":["x"]}`,
			`{"url":"` + recv.URL + `","chain":"NOPE"}`, `{"url":"` + recv.URL + `","address":"0x1"}`, `{"url":"` + recv.URL + `"} {}`,
			`{"url":"` + recv.URL + `","description":"` + strings.Repeat("d", 300) + `"}`} {
			e.want(e.send("POST", "/v1/webhooks", body, e.alice), 400, 3)
		}
		// The endpoint ceiling: 3 (WithMaxWebhooks), 429 code 8.
		for range 2 {
			e.want(e.send("POST", "/v1/webhooks", `{"url":"`+recv.URL+`"}`, e.alice), 200, 0)
		}
		e.want(e.send("POST", "/v1/webhooks", `{"url":"`+recv.URL+`"}`, e.alice), 429, 8)

		e.want(e.do("DELETE", "/v1/webhooks/"+h.ID, e.alice), 200, 0)
		e.want(e.do("DELETE", "/v1/webhooks/"+h.ID, e.alice), 404, 5)
	})
}

// TestWebhookURLPolicy: in production mode an endpoint must be https
// and public.
func TestWebhookURLPolicy(t *testing.T) {
	e := hookEnv(t, t.TempDir()+"/addrd.db", webhook.Policy{})
	for _, u := range []string{"http://hooks.example.com/", "https://127.0.0.1/", "https://169.254.169.254/", "https://[::1]/",
		"https://10.0.0.1/", "https://localhost/"} {
		r := e.send("POST", "/v1/webhooks", `{"url":"`+u+`"}`, e.alice)
		e.want(r, 400, 3)
	}
	e.want(e.send("POST", "/v1/webhooks", `{"url":"https://hooks.example.com/addrd"}`, e.alice), 200, 0)
}
