package api_test

import (
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/store/benchdata"
)

// BenchmarkHTTP drives the API with wrk on loopback (64 connections) over
// 10,000 subscribed addresses and 1,000,000 transactions (benchdata), and
// compares three reads with a handler in the same server that answers a
// constant JSON body behind the same auth, the ceiling of HTTP + auth
// here: the balances of an address, the first page of the hot address's
// transactions and the first page of its statement (20,000 rows). Each
// read is measured twice: flat out, for its requests per second against
// the constant handler's (measured before and after the reads, the mean
// taken), its p99 at saturation and what a request costs (cost); and
// open loop at a quarter of the constant handler's rate (vegeta, in a
// process of its own), for its p50 and p99 at that load and the part of
// the rate answered, beside the constant handler's own at that rate.
// scripts/bench-addrd.sh prints the figures.
func BenchmarkHTTP(b *testing.B) {
	benchdata.Run(b, testenv.Postgres, func(b *testing.B, db *store.DB, keyID, secret string) {
		name := "SQLite"
		if db.Postgres() {
			name = "PostgreSQL"
		}
		s := newBenchServer(b, db, name, keyID, secret)
		reads := []struct{ name, path string }{
			{"balances", "/v1/chains/ETH/addresses/" + benchdata.Address(2) + "/balances"},
			{"transactions", "/v1/chains/ETH/addresses/" + benchdata.Address(1) + "/transactions"},
			{"statement", "/v1/chains/ETH/addresses/" + benchdata.Address(1) + "/balance_changes"},
		}
		const constant = "/bench/constant"
		s.check(constant, keyID, secret)
		for _, rd := range reads {
			s.check(rd.path, keyID, secret) // the answer, before measuring it
		}
		flat := func(label, path string) wrkResult {
			r, c := s.measure(label, path, 10*time.Second)
			b.Logf("%-12s %8.0f req/s  p99 %6.2f ms at saturation; %v", label, r.rps, ms(r.p99), c)
			if label != "constant-end" {
				b.ReportMetric(us(c.goCPU), label+"-server-µs/req")
				if db.Postgres() {
					b.ReportMetric(us(c.pgCPU), label+"-postgres-µs/req")
				}
				b.ReportMetric(c.allocs, label+"-allocs/req")
			}
			return r
		}
		c0 := flat("constant", constant)
		var results []wrkResult
		for _, rd := range reads {
			results = append(results, flat(rd.name, rd.path))
		}
		c1 := flat("constant-end", constant)
		rps := (c0.rps + c1.rps) / 2
		b.Logf("constant     %8.0f req/s (runs %.0f, %.0f)", rps, c0.rps, c1.rps)
		b.ReportMetric(rps, "constant-rps")
		// Open loop at a quarter of the constant handler's rate (wrk's,
		// the figure of the ratios above): the constant handler first, the
		// reference for what the machine itself adds to a latency.
		target := rps / 4
		top := s.openLoop(constant, 0, 5*time.Second)
		b.Logf("constant     vegeta flat out (64 workers, closed loop): %.0f req/s; open loop at %.0f req/s (a quarter of wrk's constant):", top.ok, target)
		b.ReportMetric(top.ok, "constant-vegeta-rps")
		for _, rd := range append([]struct{ name, path string }{{"constant", constant}}, reads...) {
			p := s.openLoop(rd.path, target, 10*time.Second)
			b.Logf("%-12s p50 %6.2f ms, p99 %6.2f ms, max %7.2f ms; sent %.0f req/s, answered %.0f req/s (%.2f of the rate)",
				rd.name, ms(p.p50), ms(p.p99), ms(p.max), p.sent, p.ok, p.ok/target)
			b.ReportMetric(ms(p.p50), rd.name+"-p50-ms")
			b.ReportMetric(ms(p.p99), rd.name+"-p99-ms")
			b.ReportMetric(p.ok/target, rd.name+"-held")
		}
		for i, rd := range reads {
			b.ReportMetric(results[i].rps/rps, rd.name+"/constant")
			b.ReportMetric(ms(results[i].p99), rd.name+"-saturated-p99-ms")
			b.Logf("%-12s %.2f × constant", rd.name, results[i].rps/rps)
		}
	})
}
