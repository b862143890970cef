package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// RPCClient calls a node's JSON-RPC over HTTP: geth's, op-geth's (and
// its Engine API), btcd's and Bitcoin Core's.
type RPCClient struct {
	// URL is the endpoint.
	URL string
	// Version is the request's "jsonrpc" member ("2.0" when empty;
	// Bitcoin's nodes take "1.0").
	Version string
	// HTTP makes the requests (http.DefaultClient when nil).
	HTTP *http.Client
	// Auth, when set, adds credentials to each request.
	Auth func(*http.Request)
}

// Call makes one call and decodes its result into result (nil: ignore
// it). An error the node answers is returned naming the method, its
// message and code.
func (c RPCClient) Call(ctx context.Context, result any, method string, params ...any) error {
	if params == nil {
		params = []any{}
	}
	version := c.Version
	if version == "" {
		version = "2.0"
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": version, "id": 1, "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Auth != nil {
		c.Auth(req)
	}
	client := c.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return fmt.Errorf("%s: HTTP %d: %w", method, resp.StatusCode, err)
	}
	if out.Error != nil {
		return fmt.Errorf("%s: %s (code %d)", method, out.Error.Message, out.Error.Code)
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(out.Result, result); err != nil {
		return fmt.Errorf("%s: result: %w", method, err)
	}
	return nil
}
