package testenv_test

import (
	"database/sql"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestPostgres(t *testing.T) {
	a, b := testenv.Postgres(t), testenv.Postgres(t)
	if a == b {
		t.Fatalf("two calls gave the same database %s", a)
	}
	db, err := sql.Open("postgres", a)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
}

func TestPostgresStopStart(t *testing.T) {
	dsn := testenv.Postgres(t)
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	testenv.StopPostgres(t)
	if err := db.Ping(); err == nil {
		t.Fatal("ping succeeded with the cluster stopped")
	}
	testenv.StartPostgres(t)
	if err := db.Ping(); err != nil {
		t.Fatalf("ping after restart: %v", err)
	}
}

func TestMinIO(t *testing.T) {
	m := testenv.NewMinIO(t)
	live := func() error {
		resp, err := http.Get(m.URL() + "/minio/health/live")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := live(); err != nil {
		t.Fatalf("live: %v", err)
	}
	m.Kill()
	if err := live(); err == nil {
		t.Fatal("minio answered after Kill")
	}
	if err := m.Start(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if err := live(); err != nil {
		t.Fatalf("live after restart: %v", err)
	}
}

func TestGeth(t *testing.T) {
	g := testenv.NewGeth(t)
	ctx := t.Context()
	var chainID string
	if err := g.Call(ctx, &chainID, "eth_chainId"); err != nil || chainID != "0x539" {
		t.Fatalf("eth_chainId = %q, %v; want 0x539 (1337, the dev chain)", chainID, err)
	}
	var before, after string
	if err := g.Call(ctx, &before, "eth_blockNumber"); err != nil {
		t.Fatal(err)
	}
	// --dev.period 0: the transaction is mined into a block of its own.
	receipt, err := g.Send(ctx, map[string]any{"from": g.Account, "to": "0x00000000000000000000000000000000000000aa", "value": "0x1"})
	if err != nil || receipt["status"] != "0x1" {
		t.Fatalf("send: receipt %v, %v", receipt, err)
	}
	if err := g.Call(ctx, &after, "eth_blockNumber"); err != nil {
		t.Fatal(err)
	}
	if before == after {
		t.Fatalf("block number %s did not move after a transaction", after)
	}
	// The node restarts on its data.
	g.Stop()
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	var balance string
	if err := g.Call(ctx, &balance, "eth_getBalance", "0x00000000000000000000000000000000000000aa", "latest"); err != nil || balance != "0x1" {
		t.Fatalf("balance after restart = %q, %v; want 0x1", balance, err)
	}
}

// TestArchiveGeth: an archive node traces a block more than 128 blocks
// behind its head, whose parent state a plain dev node no longer keeps
// ("historical state is not available"; BenchmarkFetchGeth needs it).
func TestArchiveGeth(t *testing.T) {
	g := testenv.NewArchiveGeth(t)
	ctx := t.Context()
	for range 130 { // a block each (--dev.period 0)
		if _, err := g.Send(ctx, map[string]any{"from": g.Account, "to": "0x00000000000000000000000000000000000000aa", "value": "0x1"}); err != nil {
			t.Fatal(err)
		}
	}
	var head string
	if err := g.Call(ctx, &head, "eth_blockNumber"); err != nil {
		t.Fatal(err)
	}
	if n, err := strconv.ParseUint(strings.TrimPrefix(head, "0x"), 16, 64); err != nil || n < 130 {
		t.Fatalf("head %q, %v; want at least 130 blocks", head, err)
	}
	var trace []any
	if err := g.Call(ctx, &trace, "debug_traceBlockByNumber", "0x1", map[string]any{"tracer": "callTracer"}); err != nil || len(trace) != 1 {
		t.Fatalf("trace of block 1: %v, %v; want its one transaction", trace, err)
	}
}

// TestSkipReport: a skip for a missing part is appended to
// WHARF_SKIP_REPORT, which make test sums up with the Debian packages.
func TestSkipReport(t *testing.T) {
	report := filepath.Join(t.TempDir(), "skips")
	t.Setenv("WHARF_SKIP_REPORT", report)
	t.Setenv("WHARF_REQUIRE_ALL", "")
	t.Run("Missing", func(t *testing.T) {
		testenv.Tool(t, "no-such-tool-wharf")
	})
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if want := "no-such-tool-wharf\tTestSkipReport/Missing\n"; string(b) != want {
		t.Errorf("report = %q, want %q", b, want)
	}
}

// TestBitcoinNodes starts btcd and litecoind in regtest, mines 101 blocks
// on each and restarts them on the same data.
func TestBitcoinNodes(t *testing.T) {
	tests := []struct {
		name  string
		start func(testing.TB) *testenv.BitcoinNode
		addr  string
	}{
		{"btcd", func(tb testing.TB) *testenv.BitcoinNode {
			return testenv.NewBtcd(tb, "bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080")
		}, ""},
		{"litecoind", testenv.NewLitecoind, "rltc1qw508d6qejxtdg4y5r3zarvary0c5xw7k693xs3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.start(t)
			if hashes := n.Generate(t, 101, tt.addr); len(hashes) != 101 {
				t.Fatalf("generated %d blocks, want 101", len(hashes))
			}
			var height int
			n.MustCall(t, &height, "getblockcount")
			if height != 101 {
				t.Fatalf("height %d after 101 blocks", height)
			}
			n.Stop()
			if err := n.Start(); err != nil {
				t.Fatal(err)
			}
			// btcd removes a regtest chain at start; Core keeps it.
			want := 101
			if n.Dialect == testenv.DialectBtcd {
				want = 0
			}
			n.MustCall(t, &height, "getblockcount")
			if height != want {
				t.Fatalf("height %d after a restart, want %d", height, want)
			}
		})
	}
}
