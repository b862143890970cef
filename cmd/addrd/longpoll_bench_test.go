package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// rssMiB reads a process's resident set size.
func rssMiB(b *testing.B, pid int) float64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return float64(kb) / 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// BenchmarkLongPoll: an addrd serve process (SQLite, no fetcher) holds
// 1,000 long polls of GET /v1/events at once, of 20 requesters; its RSS then against the
// same process idle (target: under 200 MiB), and the time from one event
// written (by another process: the replica's 100 ms poll finds it) to
// all 1,000 answered with it.
func BenchmarkLongPoll(b *testing.B) {
	const clients = 1000
	for range b.N {
		ctx := context.Background()
		dsn := filepath.Join(b.TempDir(), "addrd.db")
		db, err := store.Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		// Twenty requesters, 50 polls each: under a key's limit of
		// requests at once (64).
		const addr = "0x00000000000000000000000000000000000000aa"
		type requester struct{ id, secret string }
		var keys []requester
		for i := range clients / 50 {
			key, secret, err := db.CreateAPIKey(ctx, fmt.Sprintf("bench %d", i))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := db.Subscribe(ctx, key.AccountID, "ETH", addr); err != nil {
				b.Fatal(err)
			}
			keys = append(keys, requester{key.ID, secret})
		}
		p := startProc(b, "--db", dsn, "--chain", "ETH=http://127.0.0.1:1", "--fetch=false", "--webhooks=false", "--log-level", "warn")
		idle := rssMiB(b, p.cmd.Process.Pid)
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: 0}, Timeout: time.Minute}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var answered []time.Time
		errs := make(chan error, clients)
		for i := range clients {
			wg.Go(func() {
				req, _ := http.NewRequest("GET", p.base+"/v1/events?wait_seconds=20&kind=balance_change", nil)
				req.SetBasicAuth(keys[i%len(keys)].id, keys[i%len(keys)].secret)
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.Contains(string(body), `"balance_change"`) {
					errs <- fmt.Errorf("%d %s", resp.StatusCode, body)
					return
				}
				mu.Lock()
				answered = append(answered, time.Now())
				mu.Unlock()
			})
		}
		// Let the requests arrive and wait: a benchmark's pause, read
		// as the peak RSS over it.
		peak := idle
		for range 30 {
			time.Sleep(100 * time.Millisecond)
			peak = max(peak, rssMiB(b, p.cmd.Process.Pid))
		}
		c := query.BalanceChange{Chain: "ETH", Address: addr, Block: 1, Amount: query.AmountOf(1), BalanceAfter: query.AmountOf(1)}
		if err := db.StoreBlocks(ctx, "ETH", []query.BlockData{{Block: query.Block{Number: 1, Hash: "0x1"}, Changes: []query.BalanceChange{c}}}); err != nil {
			b.Fatal(err)
		}
		written := time.Now()
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		last := written
		for _, a := range answered {
			if a.After(last) {
				last = a
			}
		}
		b.Logf("long poll: %d clients waiting, RSS %.0f MiB (idle %.0f MiB; ratio %.2f); all answered %.0f ms after the event was written",
			clients, peak, idle, peak/idle, ms(last.Sub(written)))
		b.ReportMetric(peak, "rss-MiB")
		p.cmd.Process.Kill()
		<-p.done
		db.Close()
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
