package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/internal/testenv"
)

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		main()
		os.Exit(0)
	}
	testenv.Main(m)
}

// run runs addrd with args in-process and returns what it printed.
func run(t testing.TB, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = newApp(&out, &errb).RunContext(context.Background(), append([]string{"addrd"}, args...))
	return out.String(), errb.String(), err
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestMigrate(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, db string) {
		out, _, err := run(t, "migrate", "--db", db)
		if err != nil || !strings.Contains(out, "applied 0001_init") {
			t.Fatalf("first migrate: %q, %v", out, err)
		}
		out, _, err = run(t, "migrate", "--db", db)
		if err != nil || out != "up to date\n" {
			t.Fatalf("second migrate: %q, %v", out, err)
		}
	})
}

func TestAPIKey(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, db string) {
		out, _, err := run(t, "apikey", "create", "--name", "alice", "--db", db)
		if err != nil {
			t.Fatal(err)
		}
		id, secret, ok := strings.Cut(lastLine(out), ":")
		if !ok || !strings.HasPrefix(id, "ak") || len(secret) < 40 {
			t.Fatalf("last line %q is not API_ID:API_SECRET", lastLine(out))
		}
		out, _, err = run(t, "apikey", "list", "--db", db)
		if err != nil || !strings.Contains(out, id) || !strings.Contains(out, "alice") || strings.Contains(out, secret) {
			t.Fatalf("list: %q, %v", out, err)
		}
		// The flags after the argument, as wharf takes them.
		if _, _, err := run(t, "apikey", "revoke", id, "--db", db); err != nil {
			t.Fatal(err)
		}
		if _, _, err := run(t, "apikey", "revoke", "--db", db, id); err == nil || !strings.Contains(err.Error(), "no active key") {
			t.Fatalf("revoking twice: %v", err)
		}
		// Without --name: the error and the usage line, not the help.
		out, _, err = run(t, "apikey", "create", "--db", db)
		want := "apikey create: --name is required; usage: addrd apikey create --name NAME [--db DB] (addrd apikey create --help says more)"
		if err == nil || err.Error() != want || shell.ExitCode(err) != shell.ExitUsage || out != "" {
			t.Fatalf("create without --name: %v, printed %q; want %q alone, exit 2", err, out, want)
		}
	})
}

func TestEnvVars(t *testing.T) {
	db := filepath.Join(t.TempDir(), "env.db")
	t.Setenv("ADDRD_DB", db)
	if out, _, err := run(t, "apikey", "create", "--name", "env"); err != nil || !strings.Contains(out, ":") {
		t.Fatalf("create with ADDRD_DB: %q, %v", out, err)
	}
	if out, _, err := run(t, "apikey", "list", "--db", db); err != nil || !strings.Contains(out, "env") {
		t.Fatalf("the key is not in ADDRD_DB's database: %q, %v", out, err)
	}
}

func TestVersion(t *testing.T) {
	out, _, err := run(t, "--version")
	if err != nil || !strings.HasPrefix(out, "addrd version ") || !strings.Contains(out, "(commit ") || !strings.Contains(out, ", go1.") {
		t.Fatalf("--version: %q, %v", out, err)
	}
}

func TestServeFlags(t *testing.T) {
	db := filepath.Join(t.TempDir(), "addrd.db")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"NoChain", nil, "at least one --chain"},
		{"NoURL", []string{"--chain", "ETH"}, "NAME=RPC_URL"},
		{"LowerName", []string{"--chain", "eth=http://x:8545"}, "NAME=RPC_URL"},
		{"BadURL", []string{"--chain", "ETH=ftp://x"}, "not an http"},
		{"Twice", []string{"--chain", "ETH=http://a:1", "--chain", "ETH=http://b:1"}, "twice"},
		{"LogLevel", []string{"--chain", "ETH=http://a:1", "--log-level", "loud"}, "--log-level"},
		{"BackfillWord", []string{"--chain", "ETH=http://a:1", "--backfill-blocks", "some"}, "--backfill-blocks"},
		{"BackfillZero", []string{"--chain", "ETH=http://a:1", "--backfill-blocks", "0"}, "--backfill-blocks"},
		{"RefreshTiny", []string{"--chain", "ETH=http://a:1", "--refresh-interval", "1ms"}, "--refresh-interval"},
		{"BadSymbol", []string{"--chain", "X:P-L=http://a:1"}, "symbol"},
		{"EmptySymbol", []string{"--chain", "X:=http://a:1"}, "symbol"},
		{"BadDecimals", []string{"--chain", "X:POL:x=http://a:1"}, "decimals"},
		{"TooManyDecimals", []string{"--chain", "X:POL:78=http://a:1"}, "decimals"},
		{"TrustedProxy", []string{"--chain", "ETH=http://a:1", "--trusted-proxy", "10.0.0.0/33"}, "--trusted-proxy"},
		{"RateKey", []string{"--chain", "ETH=http://a:1", "--rate-key", "100/d"}, "--rate-key"},
		{"MaxSubscriptions", []string{"--chain", "ETH=http://a:1", "--max-subscriptions", "-1"}, "--max-subscriptions"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := run(t, append([]string{"serve", "--db", db, "--listen", "127.0.0.1:0"}, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if code := shell.ExitCode(err); code != shell.ExitUsage {
				t.Errorf("exit code %d, want %d (a usage error)", code, shell.ExitUsage)
			}
		})
	}
}

// lines is a writer that hands each line written to a channel.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
	ch  chan string
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		line, err := l.buf.ReadString('\n')
		if err != nil {
			l.buf.WriteString(line)
			return len(p), nil
		}
		l.ch <- strings.TrimSuffix(line, "\n")
	}
}

// TestServe runs the newcomer's walk-through of docs/addrd.md against a
// real serve: create a key, subscribe, list, unsubscribe, and see the
// not-subscribed error; then stops it gracefully.
func TestServe(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, db string) {
		out, _, err := run(t, "apikey", "create", "--name", "alice", "--db", db)
		if err != nil {
			t.Fatal(err)
		}
		key := lastLine(out)
		srv := startServe(t, "--db", db, "--chain", "ETH=http://127.0.0.1:8545")
		do := func(method, path string) (int, string) {
			t.Helper()
			status, body := srv.do(t, key, method, path)
			return status, string(body)
		}
		addr := "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
		low := strings.ToLower(addr)
		// No node answers at 8545: the subscription stays SYNCING and, once
		// the fetcher's first step has failed, says why.
		status, body := do("PUT", "/v1/chains/ETH/addresses/"+addr)
		if want := `{"name":"chains/ETH/addresses/` + low + `","state":"SYNCING","history_start_block":null,"sync_problem":`; status != 200 || !strings.HasPrefix(body, want) {
			t.Fatalf("PUT = %d %s\nwant 200 %s…", status, body, want)
		}
		for start := time.Now(); ; time.Sleep(50 * time.Millisecond) { // polling an outcome, not ordering goroutines
			var sub struct {
				State       string
				SyncProblem *struct{ Reason, Since string } `json:"sync_problem"`
			}
			status, body := do("GET", "/v1/chains/ETH/addresses/"+low)
			if err := json.Unmarshal([]byte(body), &sub); status != 200 || err != nil || sub.State != "SYNCING" {
				t.Fatalf("GET the subscription = %d %s", status, body)
			}
			if p := sub.SyncProblem; p != nil && strings.Contains(p.Reason, "node unreachable") && p.Since != "" {
				break
			}
			if time.Since(start) > 30*time.Second {
				t.Fatalf("no sync_problem naming the unreachable node within 30 s: %s\n%s", body, srv.stderr)
			}
		}
		for _, step := range []struct {
			method, path string
			status       int
			body         string
		}{
			{"GET", "/v1/addresses", 200, `{"addresses":["chains/ETH/addresses/` + low + `"],"next_page_token":"","total_size":1}`},
			{"GET", "/v1/chains/ETH/addresses/" + low + "/balances", 200, `{"balances":[]}`},
			{"GET", "/v1/chains/ETH/addresses/" + low + "/transactions", 200, `{"transactions":[],"next_page_token":""}`},
			{"DELETE", "/v1/chains/ETH/addresses/" + low, 200, `{}`},
			{"GET", "/v1/chains/ETH/addresses/" + low + "/balances", 401,
				`{"code":16,"message":"requester is not subscribed for address '` + low + `'","status":"Unauthenticated"}`},
		} {
			status, body := do(step.method, step.path)
			if status != step.status || strings.TrimSpace(body) != step.body {
				t.Fatalf("%s %s = %d %s\nwant %d %s", step.method, step.path, status, body, step.status, step.body)
			}
		}
		if status, _ := do("GET", "/healthz"); status != 200 {
			t.Fatalf("/healthz: %d", status)
		}
		if status, body := do("GET", "/metrics"); status != 200 || !strings.Contains(body, "addrd_http_requests_total") ||
			!strings.Contains(body, `addrd_build_info{commit="`) || !strings.Contains(body, `goversion="go`) {
			t.Fatalf("/metrics: %d\n%s", status, body)
		}

		if err := srv.stop(); err != nil {
			t.Fatalf("serve after cancel: %v\n%s", err, srv.stderr)
		}
		if !strings.Contains(srv.stderr.String(), "stopped") {
			t.Fatalf("no graceful stop in the log:\n%s", srv.stderr)
		}
	})
}
