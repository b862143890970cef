package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/query/api"
)

// TestTransactionPageJSON: the hand-written encoding of a transactions
// page is byte for byte json.Marshal's, escapes included.
func TestTransactionPageJSON(t *testing.T) {
	odd := []string{"", "plain", `quote " and \ backslash`, "<script>&amp;", "tab\tnewline\n\x00\x1f\x7f",
		"é ü 日本", "\u2028\u2029", "bad \xff utf-8", strings.Repeat("0", 78)}
	for i, s := range odd {
		got, want := api.EncodeTransactionPage(s, i)
		if got != want {
			t.Errorf("with %q:\n got %s\nwant %s", s, got, want)
		}
	}
}

// TestBalanceChangePageJSON: the hand-written encoding of a statement
// page is byte for byte json.Marshal's, escapes included.
func TestBalanceChangePageJSON(t *testing.T) {
	odd := []string{"", "plain", `quote " and \ backslash`, "<script>&amp;", "tab\tnewline\n\x00\x1f\x7f",
		"é ü 日本", "\u2028\u2029", "bad \xff utf-8", "-" + strings.Repeat("9", 78)}
	for i, s := range odd {
		got, want := api.EncodeBalanceChangePage(s, i)
		if got != want {
			t.Errorf("with %q:\n got %s\nwant %s", s, got, want)
		}
	}
}

// TestQuoteJSONEveryByte: every byte, alone and amid plain text, is
// quoted as json.Marshal quotes it.
func TestQuoteJSONEveryByte(t *testing.T) {
	for c := range 256 {
		for _, s := range []string{string([]byte{byte(c)}), "0x" + string([]byte{byte(c)}) + "ff"} {
			want, _ := json.Marshal(s)
			if got := api.QuoteJSON(s); got != string(want) {
				t.Errorf("%q: got %s, want %s", s, got, want)
			}
		}
	}
}
