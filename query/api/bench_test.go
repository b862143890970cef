package api_test

import (
	"fmt"
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
// read is measured twice. Flat out, for its requests per second against
// the constant handler's, its p99 at saturation and what a request costs
// (cost): in rounds (WHARF_BENCH_ROUNDS, 3), each running the constant
// handler and the reads in order and then in reverse (ABBA), 3 seconds
// each, so that a load that drifts over a round cancels out of its
// ratios (the rates of one 10-second run moved by a fifth from one run to
// the next on this machine); each ratio is the median of the rounds'.
// Then open loop at a quarter of the constant handler's rate (vegeta, in
// a process of its own), for its p50 and p99 at that load and the part
// of the rate answered, beside the constant handler's own at that rate.
// scripts/bench-addrd.sh prints the figures.
func BenchmarkHTTP(b *testing.B) {
	benchdata.Run(b, testenv.Postgres, func(b *testing.B, db *store.DB, keyID, secret string) {
		name := "SQLite"
		if db.Postgres() {
			name = "PostgreSQL"
		}
		s := newBenchServer(b, db, name, keyID, secret)
		const constant = "/bench/constant"
		reads := []benchRead{
			{"balances", "/v1/chains/ETH/addresses/" + benchdata.Address(2) + "/balances"},
			{"transactions", "/v1/chains/ETH/addresses/" + benchdata.Address(1) + "/transactions"},
			{"statement", "/v1/chains/ETH/addresses/" + benchdata.Address(1) + "/balance_changes"},
		}
		all := append([]benchRead{{"constant", constant}}, reads...)
		for _, rd := range all {
			s.check(rd.path, keyID, secret) // the answer, before measuring it
		}
		var (
			rounds   = benchRounds(b)
			ratios   = map[string][]float64{}
			constRPS []float64
			p99s     = map[string][]float64{}
			costs    = map[string][]cost{}
		)
		for round := range rounds {
			sum := s.abbaRound(round, all, func(name string, r wrkResult, c cost) {
				b.Logf("%-12s %8.0f req/s  p99 %6.2f ms at saturation; %v", name, r.rps, ms(r.p99), c)
				p99s[name] = append(p99s[name], ms(r.p99))
				costs[name] = append(costs[name], c)
			})
			line := fmt.Sprintf("round %d: constant %.0f req/s", round+1, sum["constant"])
			for _, rd := range reads {
				ratios[rd.name] = append(ratios[rd.name], sum[rd.name]/sum["constant"])
				line += fmt.Sprintf(", %s %.0f req/s (%.3f)", rd.name, sum[rd.name], sum[rd.name]/sum["constant"])
			}
			b.Log(line)
			constRPS = append(constRPS, sum["constant"])
		}
		rps := median(constRPS)
		b.ReportMetric(rps, "constant-rps")
		for _, rd := range all {
			c := meanCost(costs[rd.name])
			b.Logf("%-12s %v (mean of %d runs)", rd.name, c, len(costs[rd.name]))
			b.ReportMetric(us(c.goCPU), rd.name+"-server-µs/req")
			if db.Postgres() {
				b.ReportMetric(us(c.pgCPU), rd.name+"-postgres-µs/req")
			}
			b.ReportMetric(c.allocs, rd.name+"-allocs/req")
		}
		// Open loop at a quarter of the constant handler's rate (wrk's,
		// the figure of the ratios above): the constant handler first, the
		// reference for what the machine itself adds to a latency.
		target := rps / 4
		top := s.openLoop(constant, 0, 5*time.Second)
		b.Logf("constant     vegeta flat out (64 workers, closed loop): %.0f req/s; open loop at %.0f req/s (a quarter of wrk's constant):", top.ok, target)
		b.ReportMetric(top.ok, "constant-vegeta-rps")
		for _, rd := range all {
			p := s.openLoop(rd.path, target, 10*time.Second)
			b.Logf("%-12s p50 %6.2f ms, p99 %6.2f ms, max %7.2f ms; sent %.0f req/s, answered %.0f req/s (%.2f of the rate)",
				rd.name, ms(p.p50), ms(p.p99), ms(p.max), p.sent, p.ok, p.ok/target)
			b.ReportMetric(ms(p.p50), rd.name+"-p50-ms")
			b.ReportMetric(ms(p.p99), rd.name+"-p99-ms")
			b.ReportMetric(p.ok/target, rd.name+"-held")
		}
		for _, rd := range reads {
			r := median(ratios[rd.name])
			b.ReportMetric(r, rd.name+"/constant")
			b.ReportMetric(median(p99s[rd.name]), rd.name+"-saturated-p99-ms")
			b.Logf("%-12s %.2f × constant (median of %d rounds: %.3f)", rd.name, r, rounds, ratios[rd.name])
		}
		b.Logf("constant     %8.0f req/s (median of the rounds' means)", rps)
	})
}
