package api_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
)

// The latency of a read at a given load is measured open loop, by vegeta
// in a process of its own: requests are sent at the rate's own times
// whatever the answers before them took (a late answer does not hold the
// next request back, as wrk's connections do), so a stall of the server
// shows in the latencies of every request it delays. scripts/bench-addrd.sh
// installs the pinned vegeta; here it is found on the PATH (testenv.Tool).

// loadResult is an open-loop run: the latencies of its requests, the rate
// they were sent at and the rate answered with a 200.
type loadResult struct {
	p50, p99, max time.Duration
	sent, ok      float64 // requests per second
}

// openLoop sends GET path at rate requests per second for d (vegeta
// attack, no limit on its workers; at most 256 connections, so that a
// server falling behind does not use up the loopback's ports: a request
// waiting for one counts the wait; bodies are read, not kept: the
// loader's CPU is taken from the server's two cores) and reports it. A flat-out run (rate
// 0) is closed loop instead, with 64 workers, as wrk's 64 connections:
// the loader's own ceiling. Answers other than 200 are logged, and the
// answered rate counts only 200s.
func (s *benchServer) openLoop(path string, rate float64, d time.Duration) loadResult {
	b := s.b
	b.Helper()
	if s.vegeta == "" { // looked up here: BenchmarkBooks runs no open loop
		s.vegeta = testenv.Tool(b, "vegeta")
	}
	dir := b.TempDir()
	results := filepath.Join(dir, "results.bin")
	args := []string{"attack", "-duration", d.String(), "-header", s.auth, "-output", results, "-timeout", "30s", "-max-connections", "256", "-max-body", "0"}
	if rate > 0 {
		args = append(args, "-rate", fmt.Sprintf("%d/1s", int(rate)))
	} else {
		args = append(args, "-rate", "0", "-max-workers", "64")
	}
	attack := exec.Command(s.vegeta, args...)
	attack.Stdin = strings.NewReader("GET " + s.base + path + "\n")
	if out, err := attack.CombinedOutput(); err != nil {
		b.Fatalf("vegeta attack: %v\n%s", err, out)
	}
	out, err := exec.Command(s.vegeta, "report", "-type", "json", results).Output()
	if err != nil {
		b.Fatalf("vegeta report: %v", err)
	}
	var rep struct {
		Latencies struct {
			P50 time.Duration `json:"50th"`
			P99 time.Duration `json:"99th"`
			Max time.Duration `json:"max"`
		} `json:"latencies"`
		Duration   time.Duration  `json:"duration"`
		Requests   int            `json:"requests"`
		Throughput float64        `json:"throughput"`
		Rate       float64        `json:"rate"`
		Errors     []string       `json:"errors"`
		Codes      map[string]int `json:"status_codes"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		b.Fatalf("vegeta report: %v\n%s", err, out)
	}
	os.Remove(results)
	if len(rep.Codes) != 1 || rep.Codes["200"] != rep.Requests {
		b.Logf("%s at %.0f req/s: answers %v, not all 200; errors %.300q", path, rate, rep.Codes, rep.Errors)
	}
	return loadResult{p50: rep.Latencies.P50, p99: rep.Latencies.P99, max: rep.Latencies.Max,
		sent: rep.Rate, ok: rep.Throughput}
}
