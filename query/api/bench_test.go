package api_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/store/benchdata"
)

// BenchmarkHTTP drives the API with wrk on loopback (64 connections) over
// 10,000 subscribed addresses and 1,000,000 transactions, and compares
// balances and first-page reads with a handler in the same server that
// answers a constant JSON body behind the same auth: the ceiling of
// HTTP + auth here. scripts/bench-addrd.sh prints the ratios.
func BenchmarkHTTP(b *testing.B) {
	wrk := testenv.Tool(b, "wrk")
	for _, d := range []struct {
		name string
		dsn  func(b *testing.B) string
	}{
		{"PostgreSQL", func(b *testing.B) string { return testenv.Postgres(b) }},
		{"SQLite", func(b *testing.B) string { return filepath.Join(b.TempDir(), "addrd.db") }},
	} {
		b.Run(d.name, func(b *testing.B) {
			ctx := context.Background()
			db, keyID, secret, err := benchdata.Open(ctx, d.dsn(b))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			s := api.New(api.Config{Store: db, Chains: []string{"ETH"}, Metrics: prometheus.NewRegistry()})
			s.Handle("GET /bench/constant", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"status":"ok"}` + "\n"))
			}), true)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := &http.Server{Handler: s}
			go srv.Serve(ln)
			defer srv.Close()
			base := "http://" + ln.Addr().String()
			auth := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(keyID+":"+secret))

			results := map[string]wrkResult{}
			for _, t := range []struct{ name, path string }{
				{"constant", "/bench/constant"},
				{"balances", "/v1/chains/ETH/addresses/" + benchdata.Address(2) + "/balances"},
				{"transactions", "/v1/chains/ETH/addresses/" + benchdata.Address(1) + "/transactions"},
			} {
				// Check the answer before measuring it.
				req, _ := http.NewRequest("GET", base+t.path, nil)
				req.SetBasicAuth(keyID, secret)
				resp, err := http.DefaultClient.Do(req)
				if err != nil || resp.StatusCode != 200 {
					b.Fatalf("%s: %v %v", t.path, resp, err)
				}
				resp.Body.Close()
				// A short run first: the connection pools fill and the
				// caches warm, so that the measured run is the steady state.
				if out, err := exec.Command(wrk, "-t2", "-c64", "-d2s", "-H", auth, base+t.path).CombinedOutput(); err != nil {
					b.Fatalf("wrk: %v\n%s", err, out)
				}
				out, err := exec.Command(wrk, "-t2", "-c64", "-d10s", "--latency", "-H", auth, base+t.path).CombinedOutput()
				if err != nil {
					b.Fatalf("wrk: %v\n%s", err, out)
				}
				r, err := parseWrk(string(out))
				if err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				results[t.name] = r
				b.Logf("%s %-12s %8.0f req/s  p99 %6.2f ms  non-2xx %d", d.name, t.name, r.rps, r.p99.Seconds()*1000, r.errors)
			}
			for _, n := range []string{"balances", "transactions"} {
				r := results[n]
				b.Logf("%s %-12s %.2f × constant  p99 %.2f ms", d.name, n, r.rps/results["constant"].rps, r.p99.Seconds()*1000)
				b.ReportMetric(r.rps/results["constant"].rps, n+"/constant")
				b.ReportMetric(r.p99.Seconds()*1000, n+"-p99-ms")
			}
			b.ReportMetric(results["constant"].rps, "constant-rps")
		})
	}
}

type wrkResult struct {
	rps    float64
	p99    time.Duration
	errors int
}

var (
	wrkRPS    = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkP99    = regexp.MustCompile(`\s99%\s+([0-9.]+)(us|ms|s)`)
	wrkNon2xx = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
)

func parseWrk(out string) (wrkResult, error) {
	var r wrkResult
	m := wrkRPS.FindStringSubmatch(out)
	p := wrkP99.FindStringSubmatch(out)
	if m == nil || p == nil {
		return r, fmt.Errorf("cannot read wrk's output")
	}
	r.rps, _ = strconv.ParseFloat(m[1], 64)
	v, _ := strconv.ParseFloat(p[1], 64)
	unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[p[2]]
	r.p99 = time.Duration(v * float64(unit))
	if e := wrkNon2xx.FindStringSubmatch(out); e != nil {
		r.errors, _ = strconv.Atoi(e[1])
	}
	if r.errors > 0 {
		return r, fmt.Errorf("%d responses were not 2xx", r.errors)
	}
	return r, nil
}
