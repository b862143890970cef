package utxo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/wharfhq/wharf/query"
)

// Dialects of a node's JSON-RPC.
const (
	DialectBtcd = "btcd" // getblock verbosity 2 lists transactions under rawtx
	DialectCore = "core" // Bitcoin Core and its forks (Litecoin Core): under tx
)

// rpc is a JSON-RPC client of a Bitcoin-like node: HTTP basic auth from
// the URL's user info, batches for reads of many transactions.
type rpc struct {
	endpoint   string // the URL without its user info
	user, pass string
	client     *http.Client
	id         atomic.Int64
}

// rpcError is an error the node answered with.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

func newRPC(raw string) (*rpc, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("node URL: want http://USER:PASS@HOST:PORT")
	}
	r := &rpc{client: &http.Client{Timeout: 60 * time.Second}}
	if u.User != nil {
		r.user = u.User.Username()
		r.pass, _ = u.User.Password()
	}
	u.User = nil
	r.endpoint = u.String()
	return r, nil
}

type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  []any  `json:"params"`
}

type rpcResponse struct {
	ID     int64           `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// call makes one call and decodes its result into out (nil: ignore).
// Errors: query.ErrUnavailable wrapped when the node cannot be reached or
// fails; an *rpcError for an answer of the node.
func (r *rpc) call(ctx context.Context, out any, method string, params ...any) error {
	if params == nil {
		params = []any{}
	}
	var resp rpcResponse
	if err := r.post(ctx, rpcRequest{"1.0", r.id.Add(1), method, params}, &resp); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if resp.Error != nil {
		return fmt.Errorf("%s: %w", method, resp.Error)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		return fmt.Errorf("%s: result: %v: %w", method, err, query.ErrUnavailable)
	}
	return nil
}

// batch makes calls of method, one per params, in one request, and
// returns their results in order.
func (r *rpc) batch(ctx context.Context, method string, params [][]any) ([]json.RawMessage, error) {
	if len(params) == 0 {
		return nil, nil
	}
	reqs := make([]rpcRequest, len(params))
	first := r.id.Add(int64(len(params))) - int64(len(params)) + 1
	for i, p := range params {
		reqs[i] = rpcRequest{"1.0", first + int64(i), method, p}
	}
	var resps []rpcResponse
	if err := r.post(ctx, reqs, &resps); err != nil {
		return nil, fmt.Errorf("%s ×%d: %w", method, len(params), err)
	}
	out := make([]json.RawMessage, len(params))
	seen := 0
	for _, resp := range resps {
		i := resp.ID - first
		if i < 0 || i >= int64(len(params)) {
			continue
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("%s: %w", method, resp.Error)
		}
		out[i] = resp.Result
		seen++
	}
	if seen != len(params) {
		return nil, fmt.Errorf("%s ×%d: %d answers: %w", method, len(params), seen, query.ErrUnavailable)
	}
	return out, nil
}

func (r *rpc) post(ctx context.Context, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.endpoint, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.SetBasicAuth(r.user, r.pass)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		// The URL may hold the password: say the host only.
		return fmt.Errorf("node unreachable: %w", query.ErrUnavailable)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return fmt.Errorf("node refused the credentials (HTTP %d): %w", resp.StatusCode, query.ErrUnavailable)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("HTTP %d: %v: %w", resp.StatusCode, err, query.ErrUnavailable)
	}
	return nil
}

// close closes the client's idle connections (Core waits for them when
// it shuts down).
func (r *rpc) close() { r.client.CloseIdleConnections() }

// sats converts a coin amount as the node writes it (a JSON number of
// coins, 8 decimals; btcd may write 1e-05) to the smallest unit.
func sats(n json.Number) (int64, error) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f < 0 || f > 21e8 {
		return 0, fmt.Errorf("amount %q: %w", n, query.ErrUnavailable)
	}
	return int64(math.Round(f * 1e8)), nil
}
