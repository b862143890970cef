package api_test

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/rpcstatus"
	"github.com/wharfhq/wharf/query/api"
)

// TestAccessLog: one info line per request with its method, route,
// status, duration, API id and request id.
func TestAccessLog(t *testing.T) {
	e := newEnvWith(t, filepath.Join(t.TempDir(), "addrd.db"), func(cfg *api.Config) { behindProxy(t, cfg) })
	r := e.doFrom("198.51.100.7", "GET", "/v1/chains/ETH/addresses/"+addrA+"/balances", e.alice)
	id := r.header.Get("X-Request-Id")
	var line map[string]any
	sc := bufio.NewScanner(strings.NewReader(e.logbuf.String()))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "request" && m["request_id"] == id {
			line = m
		}
	}
	if line == nil {
		t.Fatalf("no access log line for request %s:\n%s", id, e.logbuf)
	}
	for k, want := range map[string]any{
		"level": "INFO", "method": "GET", "route": "/v1/chains/{chain}/addresses/{address}/balances",
		"status": float64(401), "api_id": e.alice.id, "client": "198.51.100.7",
	} {
		if line[k] != want {
			t.Errorf("%s = %v, want %v", k, line[k], want)
		}
	}
	if _, ok := line["duration"].(float64); !ok {
		t.Errorf("duration %v", line["duration"])
	}
}

// TestUncleanPaths: a path the mux would redirect to its clean form is
// a JSON 404, not a 301 or 307 with an HTML body.
func TestUncleanPaths(t *testing.T) {
	e := newEnv(t, filepath.Join(t.TempDir(), "addrd.db"))
	for _, p := range []string{"//v1/addresses", "/v1//addresses", "/v1/./addresses", "/v1/chains/ETH/../addresses"} {
		r := e.do("GET", p, e.alice)
		e.want(r, 404, int(rpcstatus.NotFound))
		if r.header.Get("Location") != "" {
			t.Errorf("%s: Location %s", p, r.header.Get("Location"))
		}
	}
}

// TestRouteLabel: the route label is the path pattern, the method a
// label of its own.
func TestRouteLabel(t *testing.T) {
	e := newEnv(t, filepath.Join(t.TempDir(), "addrd.db"))
	e.do("PUT", "/v1/chains/ETH/addresses/"+addrA, e.alice)
	e.do("DELETE", "/v1/chains/ETH/addresses/"+addrA, e.alice)
	body := string(e.do("GET", "/metrics", key{}).body)
	for _, want := range []string{
		`addrd_http_requests_total{code="200",method="PUT",route="/v1/chains/{chain}/addresses/{address}"} 1`,
		`addrd_http_requests_total{code="200",method="DELETE",route="/v1/chains/{chain}/addresses/{address}"} 1`,
		`addrd_http_request_duration_seconds_count{route="/v1/chains/{chain}/addresses/{address}"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
