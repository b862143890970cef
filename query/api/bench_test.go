package api_test

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/store/benchdata"
)

// BenchmarkHTTP drives the API with wrk on loopback (64 connections) over
// 10,000 subscribed addresses and 1,000,000 transactions, and compares
// balances and first-page reads with a handler in the same server that
// answers a constant JSON body behind the same auth: the ceiling of
// HTTP + auth here. Each read is measured twice: flat out, for its
// requests per second against the constant handler's and its p99 at
// saturation; and paced at the rate the issue asks it to sustain (a
// quarter of the constant handler's), for its p99 at that load.
// scripts/bench-addrd.sh prints the figures.
func BenchmarkHTTP(b *testing.B) {
	wrk := testenv.Tool(b, "wrk")
	benchdata.Run(b, testenv.Postgres, func(b *testing.B, db *store.DB, keyID, secret string) {
		s := api.New(api.Config{Store: db, Chains: []string{"ETH"}, Metrics: prometheus.NewRegistry(), MaxInFlight: db.Readers()})
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
		run := func(url string, d time.Duration, args ...string) wrkResult {
			b.Helper()
			args = append([]string{"-t2", "-c64", "-d" + d.String(), "--latency", "-H", auth}, args...)
			out, err := exec.Command(wrk, append(args, url)...).CombinedOutput()
			if err != nil {
				b.Fatalf("wrk: %v\n%s", err, out)
			}
			r, err := parseWrk(string(out))
			if err != nil {
				b.Fatalf("%v\n%s", err, out)
			}
			return r
		}

		var constant wrkResult
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
			run(base+t.path, 2*time.Second)
			r := run(base+t.path, 10*time.Second)
			b.Logf("%-12s %8.0f req/s  p99 %6.2f ms at saturation", t.name, r.rps, ms(r.p99))
			if t.name == "constant" {
				constant = r
				b.ReportMetric(r.rps, "constant-rps")
				continue
			}
			target := constant.rps / 4
			p := paced(b, run, base+t.path, target)
			b.Logf("%-12s %.2f × constant; paced at %.0f req/s (a quarter of constant): %.0f req/s, p99 %.2f ms",
				t.name, r.rps/constant.rps, target, p.rps, ms(p.p99))
			b.ReportMetric(r.rps/constant.rps, t.name+"/constant")
			b.ReportMetric(ms(r.p99), t.name+"-saturated-p99-ms")
			b.ReportMetric(p.rps/target, t.name+"-paced/target")
			b.ReportMetric(ms(p.p99), t.name+"-p99-ms")
		}
	})
}

// paced runs wrk at about rate requests per second: each of its 64
// connections waits between a response and its next request (wrk's
// delay(), in whole milliseconds). The wait leaves room for the time a
// request itself takes at that load, learnt from a short run first and
// from each measured run that fell short of rate (three at most).
func paced(b *testing.B, run func(url string, d time.Duration, args ...string) wrkResult, url string, rate float64) wrkResult {
	b.Helper()
	script := filepath.Join(b.TempDir(), "pace.lua")
	cycle := 64 * 1000 / rate // ms between one connection's requests
	pace := func(wait int, d time.Duration) wrkResult {
		if err := os.WriteFile(script, fmt.Appendf(nil, "function delay() return %d end\n", wait), 0o644); err != nil {
			b.Fatal(err)
		}
		return run(url, d, "-s", script)
	}
	wait := int(cycle)
	r := pace(wait, 3*time.Second)
	for range 3 {
		took := 64*1000/r.rps - float64(wait) // ms a request itself takes
		if next := max(0, int(cycle-took)); next < wait {
			wait = next
		} else if r.rps < rate && wait > 0 {
			wait--
		}
		if r = pace(wait, 10*time.Second); r.rps >= 0.98*rate || wait == 0 {
			break
		}
	}
	return r
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }

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
