package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// TestReceiveNamesAsset: a delivered balance change names what moved, the
// chain's own coin or a token (an ETH and a token movement looked alike).
func TestReceiveNamesAsset(t *testing.T) {
	wh, err := standardwebhooks.NewWebhook("whsec_" + strings.Repeat("A", 43) + "=")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, data, want string }{
		{"Native", `{"chain":"ETH","address":"0xab","block_number":7,"amount":"-21000","contract":""}`,
			"ev1 balance_change ETH 0xab block 7 native amount -21000 cursor c1\n"},
		{"Token", `{"chain":"ETH","address":"0xab","block_number":7,"amount":"5","contract":"0xcd"}`,
			"ev1 balance_change ETH 0xab block 7 token 0xcd amount 5 cursor c1\n"},
		{"TokenID", `{"chain":"ETH","address":"0xab","block_number":7,"amount":"1","contract":"0xcd","token_id":"42"}`,
			"ev1 balance_change ETH 0xab block 7 token 0xcd id 42 amount 1 cursor c1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(`{"id":"ev1","type":"balance_change","cursor":"c1","data":` + tt.data + `}`)
			now := time.Now()
			sig, err := wh.Sign("msg1", now, body)
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest("POST", "/hook", bytes.NewReader(body))
			r.Header.Set("webhook-id", "msg1")
			r.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
			r.Header.Set("webhook-signature", sig)
			var out bytes.Buffer
			w := httptest.NewRecorder()
			receiver(wh, &out).ServeHTTP(w, r)
			if w.Code != http.StatusNoContent || out.String() != tt.want {
				t.Errorf("%d, printed %q; want 204 and %q", w.Code, out.String(), tt.want)
			}
		})
	}
}
