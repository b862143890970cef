package evm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
)

func TestRedactURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"http://127.0.0.1:8545", "http://127.0.0.1:8545"},
		{"http://127.0.0.1:8545/", "http://127.0.0.1:8545"},
		{"https://mainnet.infura.io/v3/KEY", "https://mainnet.infura.io/redacted"},
		{"https://eth-mainnet.g.alchemy.com/v2/KEY?x=1", "https://eth-mainnet.g.alchemy.com/redacted?redacted"},
		{"https://node.example?apikey=KEY", "https://node.example?redacted"},
		{"https://user:KEY@node.example", "https://redacted@node.example"},
		{"wss://user@node.example/ws/KEY#frag", "wss://redacted@node.example/redacted#redacted"},
		{"/var/run/geth.ipc", "?"},
		{"::", "?"},
		{"//KEY", "?"}, // no scheme: the key would be the host
		{"mainnet.infura.io:443/v3/KEY", "?"},
	} {
		if got := evm.RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestNodeErrorsScrubbed: a gateway whose JSON-RPC errors echo the
// request (its path, query, userinfo, in raw and escaped forms, as quota
// and routing errors do) leaks none of the URL's secret parts through
// any of the Source's errors.
func TestNodeErrorsScrubbed(t *testing.T) {
	const (
		user   = "alice-user"
		pass   = "p@ss/w0rd secret"
		basic  = "YWxpY2UtdXNlcjpwQHNzL3cwcmQgc2VjcmV0" // base64 of user:pass
		seg    = "pathkey-7f3a9c"
		seg2   = "tenant 42/x"
		qval   = "qkey-b81d"
		qval2  = "other+key/&="
		frag   = "fragkey-55"
		header = "Authorization"
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		body, _ := io.ReadAll(r.Body)
		echo := fmt.Sprintf("over quota: project %s (%s) ?%s query %v auth %s raw %s", r.URL.Path, r.URL.EscapedPath(), r.URL.RawQuery,
			r.URL.Query(), r.Header.Get(header), url.QueryEscape(r.URL.Path))
		if u, p, ok := r.BasicAuth(); ok {
			echo += " user " + u + " pass " + p
		}
		msg, _ := json.Marshal(echo)
		if len(body) > 0 && body[0] == '[' { // a batch: one error answer each
			var reqs []struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal(body, &reqs)
			var out []string
			for _, q := range reqs {
				out = append(out, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":%s}}`, q.ID, msg))
			}
			fmt.Fprintf(w, "[%s]", strings.Join(out, ","))
			return
		}
		json.Unmarshal(body, &req)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":%s}}`, req.ID, msg)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	u.User = url.UserPassword(user, pass)
	u.Path = "/v3/" + seg + "/" + seg2
	u.RawQuery = url.Values{"apikey": {qval}, "k2": {qval2}}.Encode()
	u.Fragment = frag
	ctx := context.Background()
	src, err := evm.Dial(ctx, u.String(), evm.SourceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	b := query.SourceBlock{Block: query.Block{Number: 1, Hash: "0x01"}, Txs: []query.SourceTx{{Hash: "0x02"}}}
	calls := map[string]func() error{
		"Head":     func() error { _, err := src.Head(ctx); return err },
		"ChainID":  func() error { _, err := src.ChainID(ctx); return err },
		"Blocks":   func() error { _, err := src.Blocks(ctx, 1, 3); return err },
		"Balances": func() error { _, err := src.Balances(ctx, 1, []query.BalanceQuery{{Address: "0x01"}}); return err },
		"Transfers": func() error {
			_, err := src.Transfers(ctx, 1, 2, []string{"0x0000000000000000000000000000000000000001"})
			return err
		},
		"BlockReceipts": func() error { _, _, err := src.BlockReceipts(ctx, query.Block{Number: 1, Hash: "0x01"}); return err },
		"Traces":        func() error { _, err := src.Traces(ctx, b, query.TraceCallTracer); return err },
		"States":        func() error { _, err := src.States(ctx, 1, []string{"0x01"}, true); return err },
	}
	var secretForms []string
	for _, s := range []string{user, pass, seg, "tenant 42", qval, qval2, frag, basic[:20]} {
		secretForms = append(secretForms, s, url.PathEscape(s), url.QueryEscape(s), strings.ToLower(url.QueryEscape(s)))
	}
	for name, call := range calls {
		err := call()
		if err == nil {
			t.Errorf("%s: no error from a node that answers only errors", name)
			continue
		}
		for _, s := range secretForms {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: the error shows %q: %v", name, s, err)
			}
		}
		if !strings.Contains(err.Error(), "over quota") {
			t.Errorf("%s: %v, want the node's own message kept (scrubbed)", name, err)
		}
	}
}
