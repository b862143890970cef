package api_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// openLoop sends GET path at a fixed rate for d, from 64 connections, as
// wrk2 does and wrk cannot: each request has its time on a schedule set
// at the start, and its latency counts from that time, not from when a
// connection came free to send it. When the server falls behind, the
// requests waiting for a connection count their wait (wrk's paced run,
// whose connections wait for an answer before the next request, leaves
// that out: "coordinated omission"). The loader runs in the benchmark's
// process, beside the server; at a quarter of the constant handler's
// rate it costs the server little. A request that fails, or answers
// other than 200, fails the benchmark.
func (s *benchServer) openLoop(path string, rate float64, d time.Duration) wrkResult {
	s.b.Helper()
	const conns = 64
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", s.base+path, nil)
	if err != nil {
		s.b.Fatal(err)
	}
	name, value, _ := strings.Cut(s.auth, ": ")
	req.Header.Set(name, value)

	interval := time.Duration(float64(time.Second) / rate)
	n := int(d / interval)
	due := make(chan time.Time, n)
	var (
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, n)
		failure   error
		wg        sync.WaitGroup
	)
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for at := range due {
				resp, err := client.Do(req.Clone(ctx))
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = &statusError{resp.StatusCode}
					}
				}
				took := time.Since(at)
				mu.Lock()
				if err != nil && failure == nil {
					failure = err
				}
				latencies = append(latencies, took)
				mu.Unlock()
			}
		}()
	}
	start := time.Now()
	timer := time.NewTimer(0)
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		if wait := time.Until(at); wait > 0 {
			timer.Reset(wait)
			<-timer.C
		}
		due <- at
	}
	close(due)
	wg.Wait()
	elapsed := time.Since(start)
	if failure != nil {
		s.b.Fatalf("open loop on %s: %v", path, failure)
	}
	slices.Sort(latencies)
	return wrkResult{rps: float64(len(latencies)) / elapsed.Seconds(), p99: latencies[len(latencies)*99/100], requests: len(latencies)}
}

type statusError struct{ code int }

func (e *statusError) Error() string { return http.StatusText(e.code) }
