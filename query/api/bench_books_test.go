package api_test

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store/benchdata"
)

// BenchmarkBooks measures the books reads on PostgreSQL and
// SQLite over an address with 1,000,000 statement rows
// (WHARF_BENCH_ROWS sets another number), seeded inside the database
// (benchdata: one INSERT … SELECT over a generated series), beside 100
// other subscribed addresses. With wrk on loopback, as BenchmarkHTTP:
// a filtered range page (a block range of 600,000 blocks, one token, one
// kind, oldest first) against the constant handler (target >= 0.25) and
// against the unfiltered first page (target: at least 1/1.2 of its
// rate), and the balances as of a block against the plain balances
// (target: at least half its rate). Then the export of every row, read
// by one client: rows a second (target >= 100,000) and the growth of the
// process's peak RSS during it (target < 50 MiB; the server is in this
// process). The reads are measured in rounds (WHARF_BENCH_ROUNDS, 3),
// each in order and then in reverse (ABBA); a round's ratios are of its
// two runs' mean rates, and each figure is the median of the rounds'.
// scripts/bench.sh books prints the figures.
func BenchmarkBooks(b *testing.B) {
	rows, err := benchdata.BooksRows()
	if err != nil {
		b.Fatal(err)
	}
	rounds := benchRounds(b)
	for _, d := range testenv.DBs() {
		b.Run(d.Name, func(b *testing.B) {
			ctx := context.Background()
			db, key, secret := benchStore(b, d.DSN(b))
			start := time.Now()
			if err := benchdata.SeedBooks(ctx, db, key.AccountID, rows); err != nil {
				b.Fatal(err)
			}
			head := query.Block{Number: uint64(rows), Hash: "0xhead", ParentHash: "0xparent", Time: time.Unix(1_700_000_000+int64(rows)*12, 0)}
			if err := db.StoreBlock(ctx, "ETH", head, nil, nil); err != nil {
				b.Fatal(err)
			}
			b.Logf("seeded %d statement rows in %v", rows, time.Since(start).Round(time.Second))
			s := newBenchServer(b, db, d.Name, key.ID, secret)
			hot := "/v1/chains/ETH/addresses/" + benchdata.Address(1)
			reads := []benchRead{
				{"constant", "/bench/constant"},
				{"statement", hot + "/balance_changes"},
				{"range", hot + "/balance_changes?start_block=" + strconv.Itoa(rows/5) + "&end_block=" + strconv.Itoa(rows*4/5) +
					"&contract=0x00000000000000000000000000000000000000c0&kind=fee&order_by=block_number"},
				{"balances", hot + "/balances"},
				{"balances-at", hot + "/balances?block_number=" + strconv.Itoa(rows/2)},
			}
			// ABBA: each round runs the reads in order, then in reverse, and
			// its ratios are of the two runs' mean rates, so that a load
			// that drifts over a round cancels out.
			var perRound []map[string]float64
			costs := map[string][]cost{}
			for _, rd := range reads {
				s.check(rd.path, key.ID, secret)
			}
			for round := range rounds {
				sum := s.abbaRound(round, reads, func(name string, _ wrkResult, c cost) {
					costs[name] = append(costs[name], c)
				})
				b.Logf("round %d: range/constant %.3f, first-page/range %.3f, balances/balances-at %.3f (constant %.0f, statement %.0f, range %.0f, balances %.0f, balances-at %.0f req/s)",
					round+1, sum["range"]/sum["constant"], sum["statement"]/sum["range"], sum["balances"]/sum["balances-at"],
					sum["constant"], sum["statement"], sum["range"], sum["balances"], sum["balances-at"])
				perRound = append(perRound, map[string]float64{"range/constant": sum["range"] / sum["constant"],
					"first-page/range": sum["statement"] / sum["range"], "balances/balances-at": sum["balances"] / sum["balances-at"]})
			}
			for _, rd := range reads {
				b.Logf("%-12s %v", rd.name, meanCost(costs[rd.name]))
			}
			rps := map[string]float64{}
			for _, m := range []string{"range/constant", "first-page/range", "balances/balances-at"} {
				var vs []float64
				for _, r := range perRound {
					vs = append(vs, r[m])
				}
				rps[m] = median(vs)
				b.ReportMetric(rps[m], m)
			}

			// The export of every row, by one client.
			req, _ := http.NewRequest("GET", s.base+hot+"/balance_changes:export", nil)
			req.SetBasicAuth(key.ID, secret)
			rss0 := procStatus(b, "VmRSS")
			if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
				b.Fatalf("reset the peak RSS: %v", err)
			}
			t0 := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("export: %v %v", resp, err)
			}
			sc := bufio.NewScanner(resp.Body)
			lines := 0
			for sc.Scan() {
				lines++
			}
			resp.Body.Close()
			took := time.Since(t0)
			if err := sc.Err(); err != nil || lines != rows+1 || resp.Trailer.Get("Addrd-Export-Rows") != strconv.Itoa(rows) {
				b.Fatalf("export: %d lines, trailer %q, %v", lines, resp.Trailer.Get("Addrd-Export-Rows"), err)
			}
			grew := procStatus(b, "VmHWM") - rss0
			b.Logf("export: %d rows in %v, %.0f rows/s; peak RSS %d MiB over the %d MiB before", rows, took.Round(time.Millisecond),
				float64(rows)/took.Seconds(), grew>>20, rss0>>20)
			b.Logf("median of %d rounds: range page / constant %.2f (target >= 0.25); first page / range page %.2f (target <= 1.2); balances / balances as of a block %.2f (target <= 2)",
				rounds, rps["range/constant"], rps["first-page/range"], rps["balances/balances-at"])
			b.Logf("export %.0f rows/s (target >= 100,000); peak RSS growth %.1f MiB (target < 50)", float64(rows)/took.Seconds(), float64(grew)/(1<<20))
			b.ReportMetric(float64(rows)/took.Seconds(), "export-rows/s")
			b.ReportMetric(float64(grew)/(1<<20), "export-peak-rss-growth-MiB")
		})
	}
}

// procStatus reads a field of /proc/self/status, in bytes.
func procStatus(b *testing.B, field string) int64 {
	b.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// meanCost is the mean of what the runs of a read cost.
func meanCost(cs []cost) cost {
	var m cost
	for _, c := range cs {
		m.goCPU += c.goCPU / time.Duration(len(cs))
		m.pgCPU += c.pgCPU / time.Duration(len(cs))
		m.allocs += c.allocs / float64(len(cs))
		m.bytes += c.bytes / float64(len(cs))
	}
	return m
}

// benchRounds is the number of ABBA rounds a benchmark measures its reads
// in: WHARF_BENCH_ROUNDS, 3 when it is not set.
func benchRounds(b *testing.B) int {
	b.Helper()
	v := os.Getenv("WHARF_BENCH_ROUNDS")
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("WHARF_BENCH_ROUNDS=%q: want a positive number", v)
	}
	return n
}

// median is the median of vs (the upper one of an even count).
func median(vs []float64) float64 {
	vs = slices.Clone(vs)
	slices.Sort(vs)
	return vs[len(vs)/2]
}
