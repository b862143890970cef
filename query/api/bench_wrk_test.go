package api_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/store"
)

// benchServer is the API over db on loopback, with a constant JSON
// handler behind the same auth at /bench/constant, wrk to drive it flat
// out and vegeta to drive it at a rate (bench_openloop_test.go).
// It logs as addrd serve does (a text line a request, at level info),
// into io.Discard: the line's cost is measured, not a terminal's.
type benchServer struct {
	b      *testing.B
	wrk    string
	vegeta string // found on first use (openLoop)
	base   string
	auth   string
	db     *store.DB
	name   string // the database's, in the names of profile files
}

func newBenchServer(b *testing.B, db *store.DB, name, keyID, secret string) *benchServer {
	b.Helper()
	wrk := testenv.Tool(b, "wrk")
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s := api.New(api.Config{Store: db, Chains: []string{"ETH"}, Syntax: evmSyntax("ETH"), Logger: log, Metrics: prometheus.NewRegistry(), MaxInFlight: db.Readers()})
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
	b.Cleanup(func() { srv.Close() })
	return &benchServer{b: b, wrk: wrk, base: "http://" + ln.Addr().String(), db: db, name: name,
		auth: "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(keyID+":"+secret))}
}

// check fails the benchmark unless path answers 200.
func (s *benchServer) check(path, keyID, secret string) {
	s.b.Helper()
	req, _ := http.NewRequest("GET", s.base+path, nil)
	req.SetBasicAuth(keyID, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		s.b.Fatalf("%s: %v %v", path, resp, err)
	}
	resp.Body.Close()
}

// run runs wrk on path for d with 64 connections.
func (s *benchServer) run(path string, d time.Duration, args ...string) wrkResult {
	s.b.Helper()
	args = append([]string{"-t2", "-c64", "-d" + d.String(), "--latency", "-H", s.auth}, args...)
	out, err := exec.Command(s.wrk, append(args, s.base+path)...).CombinedOutput()
	if err != nil {
		s.b.Fatalf("wrk: %v\n%s", err, out)
	}
	r, err := parseWrk(string(out))
	if err != nil {
		s.b.Fatalf("%v\n%s", err, out)
	}
	return r
}

// cost is what a request costs the server, averaged over a run: CPU of
// the server's process (the API, and SQLite in it), CPU of the
// PostgreSQL backends serving it, and the Go heap allocations.
type cost struct {
	goCPU, pgCPU time.Duration // per request
	allocs       float64       // per request
	bytes        float64       // per request
}

func (c cost) String() string {
	return fmt.Sprintf("per request %4.0f µs server CPU + %4.0f µs PostgreSQL CPU, %4.0f allocs, %5.1f KiB",
		us(c.goCPU), us(c.pgCPU), c.allocs, c.bytes/1024)
}

func us(d time.Duration) float64 { return d.Seconds() * 1e6 }

// measure runs wrk flat out on path (after a short warming run: the
// connection pools fill and the caches warm, so that the measured run is
// the steady state) and measures what its requests cost. With
// WHARF_BENCH_PROFILE=DIR it writes the run's CPU profile and the
// allocation profiles before and after it there:
//
//	go tool pprof -top DIR/PostgreSQL-balances-0.cpu.pprof
//	go tool pprof -top -sample_index=alloc_space -base DIR/PostgreSQL-balances-0.allocs-before.pprof DIR/PostgreSQL-balances-0.allocs.pprof
//
// (label: the read and its run's number in the benchmark, from 0).
func (s *benchServer) measure(label, path string, d time.Duration) (wrkResult, cost) {
	s.b.Helper()
	s.run(path, 2*time.Second)
	dir := os.Getenv("WHARF_BENCH_PROFILE")
	prefix := filepath.Join(dir, s.name+"-"+label)
	if dir != "" {
		s.writeProfile("allocs", prefix+".allocs-before.pprof")
		f, err := os.Create(prefix + ".cpu.pprof")
		if err != nil {
			s.b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			s.b.Fatal(err)
		}
	}
	pg0 := s.postgresCPU()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := processCPU(s.b)
	r := s.run(path, d)
	cpu1 := processCPU(s.b)
	runtime.ReadMemStats(&m1)
	pg1 := s.postgresCPU()
	if dir != "" {
		pprof.StopCPUProfile()
		s.writeProfile("allocs", prefix+".allocs.pprof")
	}
	n := time.Duration(max(r.requests, 1))
	var pg time.Duration
	for pid, t := range pg1 {
		pg += t - pg0[pid]
	}
	return r, cost{goCPU: (cpu1 - cpu0) / n, pgCPU: pg / n,
		allocs: float64(m1.Mallocs-m0.Mallocs) / float64(n), bytes: float64(m1.TotalAlloc-m0.TotalAlloc) / float64(n)}
}

func (s *benchServer) writeProfile(name, path string) {
	s.b.Helper()
	f, err := os.Create(path)
	if err != nil {
		s.b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		s.b.Fatal(err)
	}
}

// processCPU is the CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// postgresCPU is the CPU time each PostgreSQL client backend of the
// benchmark's database has used, by process id (from /proc; none on
// SQLite). The backend that runs the listing is listed too: it is one of
// the pool's, and the listing before a run may run on another than the
// one after it; left out of the first, a backend's whole life was
// counted in the run (once 1,145 µs of PostgreSQL's CPU a request where
// the other reads cost 56 to 306). Autovacuum's workers are not the
// requests'.
func (s *benchServer) postgresCPU() map[int]time.Duration {
	s.b.Helper()
	out := map[int]time.Duration{}
	if !s.db.Postgres() {
		return out
	}
	rows, err := s.db.Bun().QueryContext(context.Background(),
		"SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'")
	if err != nil {
		s.b.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			s.b.Fatal(err)
		}
		cpu, err := testenv.ProcessCPU(pid)
		if err != nil {
			continue // gone
		}
		out[pid] = cpu
	}
	if err := rows.Err(); err != nil {
		s.b.Fatal(err)
	}
	return out
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }

type wrkResult struct {
	rps      float64
	p99      time.Duration
	requests int
	errors   int
}

var (
	wrkRPS      = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkP99      = regexp.MustCompile(`\s99%\s+([0-9.]+)(us|ms|s)`)
	wrkRequests = regexp.MustCompile(`(\d+) requests in`)
	wrkNon2xx   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
)

func parseWrk(out string) (wrkResult, error) {
	var r wrkResult
	m := wrkRPS.FindStringSubmatch(out)
	p := wrkP99.FindStringSubmatch(out)
	n := wrkRequests.FindStringSubmatch(out)
	if m == nil || p == nil || n == nil {
		return r, fmt.Errorf("cannot read wrk's output")
	}
	r.rps, _ = strconv.ParseFloat(m[1], 64)
	r.requests, _ = strconv.Atoi(n[1])
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

// A benchRead is a read a benchmark measures: its name in the figures,
// and its path.
type benchRead struct{ name, path string }

// abbaRound measures each read flat out for 3 seconds, in order and then
// in reverse (ABBA), and returns each read's mean rate over its two runs:
// a load that drifts over the round cancels out of their ratios. each
// gets every run's result and cost; round numbers the runs' labels (the
// names of their profiles).
func (s *benchServer) abbaRound(round int, reads []benchRead, each func(name string, r wrkResult, c cost)) map[string]float64 {
	s.b.Helper()
	sum := map[string]float64{}
	for pass := range 2 {
		for i := range reads {
			rd := reads[i]
			if pass == 1 {
				rd = reads[len(reads)-1-i]
			}
			r, c := s.measure(fmt.Sprintf("%s-%d", rd.name, 2*round+pass), rd.path, 3*time.Second)
			sum[rd.name] += r.rps / 2
			each(rd.name, r, c)
		}
	}
	return sum
}
