package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
)

// Secrets of node URLs, as providers place them: in the userinfo, the
// path and the query. None may appear in anything addrd shows.
const (
	secretPass  = "PASSsecret1"
	secretPath  = "PATHsecret2"
	secretQuery = "QUERYsecret3"
	secretWrong = "WRONGsecret4"
)

var secrets = []string{secretPass, secretPath, secretQuery, secretWrong}

// noSecret fails the test when out holds one of the secrets.
func noSecret(t *testing.T, what, out string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("%s shows the secret %s:\n%s", what, s, out)
		}
	}
}

// TestNodeSecretsNeverShown starts addrd with three nodes whose URLs
// hold secrets in the userinfo, the path and the query: one that works
// (a provider-like endpoint before a real geth, which checks all three),
// one that refuses the key (401) and one that does not answer. The logs
// at debug level, stdout, /healthz, /metrics and the errors of bad flags
// name the chain and a short reason, or the URL redacted; never a secret.
func TestNodeSecretsNeverShown(t *testing.T) {
	geth := testenv.NewGeth(t)
	// A block above genesis, for a stored head above 0.
	if _, err := geth.Send(context.Background(), map[string]any{"from": geth.Account, "to": geth.Account, "value": "0x1"}); err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(geth.URL)
	if err != nil {
		t.Fatal(err)
	}
	forward := httputil.NewSingleHostReverseProxy(target)
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		if r.URL.Path != "/v3/"+secretPath || r.URL.Query().Get("apikey") != secretQuery || user != "user" || pass != secretPass {
			http.Error(w, "invalid project id", http.StatusUnauthorized)
			return
		}
		r.URL.Path, r.URL.RawQuery = "/", ""
		r.Header.Del("Authorization")
		forward.ServeHTTP(w, r)
	}))
	defer provider.Close()
	host := strings.TrimPrefix(provider.URL, "http://")
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := closed.Addr().String()
	closed.Close()

	good := "http://user:" + secretPass + "@" + host + "/v3/" + secretPath + "?apikey=" + secretQuery
	wrong := "http://user:" + secretWrong + "@" + host + "/v3/" + secretPath + "?apikey=" + secretQuery
	unreachable := "https://user:" + secretPass + "@" + down + "/v3/" + secretPath + "?apikey=" + secretQuery

	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "addrd.db")
			p := startProc(t, "--db", db, "--confirmations", "0", "--log-level", "debug", "--log-format", format,
				"--chain", "ETH="+good, "--chain", "BAD="+wrong, "--chain", "DOWN="+unreachable)
			var h healthz
			eventually(t, 60*time.Second, "ETH fetched, BAD and DOWN failing", func() bool {
				h = p.health(t)
				return h.Chains["ETH"].StoredHead > 0 && h.Chains["ETH"].Problem == "" &&
					h.Fetch["BAD"] != "" && h.Fetch["DOWN"] != ""
			})
			if got := h.Chains["ETH"].ChainID; got != "eip155:1337" {
				t.Errorf("/healthz chain_id of ETH %q, want eip155:1337 (CAIP-2)", got)
			}
			if got := h.Chains["DOWN"].ChainID; got != "" {
				t.Errorf("/healthz chain_id of DOWN, never fetched, %q", got)
			}
			if !strings.Contains(h.Fetch["BAD"], "HTTP 401") || !strings.Contains(h.Fetch["DOWN"], "node unreachable") {
				t.Errorf("/healthz reasons: BAD %q, DOWN %q; want HTTP 401 and node unreachable", h.Fetch["BAD"], h.Fetch["DOWN"])
			}
			_, body := p.do(t, "", "GET", "/healthz")
			noSecret(t, "/healthz", string(body))
			_, body = p.do(t, "", "GET", "/metrics")
			noSecret(t, "/metrics", string(body))
			_, body = p.do(t, "", "GET", "/v1/chains/DOWN/addresses")
			noSecret(t, "an API error", string(body))
			p.signal(t, syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				t.Fatal("serve did not stop on SIGTERM")
			}
			noSecret(t, "stdout", p.stdout.String())
			noSecret(t, "the log", p.stderr.String())
			if !strings.Contains(p.stderr.String(), "redacted@"+down+"/redacted?redacted") {
				t.Errorf("the log does not name DOWN's node redacted:\n%s", p.stderr)
			}
		})
	}

	t.Run("Errors", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "addrd.db")
		for _, args := range [][]string{
			{"--chain", "eth=" + good},
			{"--chain", "ETH=ftp://user:" + secretPass + "@host/" + secretPath + "?k=" + secretQuery},
			{"--chain", "ETH=ws://user:" + secretPass + "@" + down + "/" + secretPath + "?k=" + secretQuery},
		} {
			stdout, stderr, err := run(t, append([]string{"serve", "--listen", "127.0.0.1:0", "--db", db}, args...)...)
			if err == nil {
				t.Fatalf("serve %v succeeded", args)
			}
			noSecret(t, "serve's error", err.Error()+"\n"+stdout+"\n"+stderr)
		}
	})
}
