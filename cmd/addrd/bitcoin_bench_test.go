package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
)

// BenchmarkServeBitcoinWebhook measures, on addrd serve against btcd in
// regtest, the time from a block paying a subscribed address being
// announced (generate returned: the node has it) to a webhook receiver
// on loopback having the row's balance_change event: the fetcher's wait
// for the block (--fetch-interval, ADDRD_BENCH_FETCH_INTERVAL, default
// 2s), reading it, storing the rows with their events, and the delivery.
// ADDRD_BENCH_BLOCKS blocks (default 30), one a payment; p50, p99 and
// max. One measurement whatever b.N: run with -benchtime=1x.
func BenchmarkServeBitcoinWebhook(b *testing.B) {
	blocks := 30
	if v, err := strconv.Atoi(os.Getenv("ADDRD_BENCH_BLOCKS")); err == nil && v > 0 {
		blocks = min(v, 95) // the payer's mature coinbases
	}
	interval := "2s"
	if v := os.Getenv("ADDRD_BENCH_FETCH_INTERVAL"); v != "" {
		interval = v
	}
	r := newRegtest(b, testenv.DialectBtcd)
	db := filepath.Join(b.TempDir(), "addrd.db")
	out, _, err := run(b, "apikey", "create", "--name", "bench", "--db", db)
	if err != nil {
		b.Fatal(err)
	}
	key := lastLine(out)
	const chain = "BTCREGTEST"
	s := startServe(b, "--db", db, "--chain", chain+"="+r.node.URL, "--confirmations", "0", "--fetch-interval", interval,
		"--webhook-allow-http", "--webhook-allow-private", "--log-level", "warn")
	_, to := r.p2wpkh(r.key(0, 0).PubKey())

	// The receiver: when each block's balance_change of the address came.
	var mu sync.Mutex
	got := map[uint64]time.Time{}
	arrived := make(chan struct{}, 1)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(req.Body)
		var e struct {
			Type string `json:"type"`
			Data struct {
				Address     string `json:"address"`
				BlockNumber uint64 `json:"block_number"`
			} `json:"data"`
		}
		if json.Unmarshal(body, &e) == nil && e.Type == query.EventBalanceChange && e.Data.Address == to {
			mu.Lock()
			if _, ok := got[e.Data.BlockNumber]; !ok {
				got[e.Data.BlockNumber] = at
			}
			mu.Unlock()
			select {
			case arrived <- struct{}{}:
			default:
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	if status, body := s.do(b, key, "PUT", "/v1/chains/"+chain+"/addresses/"+to); status != 200 {
		b.Fatalf("subscribe: %d %s", status, body)
	}
	if status, body := s.send(b, key, "POST", "/v1/webhooks", fmt.Sprintf(`{"url":%q,"chain":%q,"address":%q}`, recv.URL+"/hook", chain, to)); status != 200 {
		b.Fatalf("webhook: %d %s", status, body)
	}
	var head uint64
	r.node.MustCall(b, &head, "getblockcount")
	var lat []time.Duration
	b.ResetTimer()
	for i := range blocks {
		cb := r.coinbase(uint64(i + 1))
		r.send([]coin{cb}, to, int64(1000_0000), r.addr, cb.value-1000_0000-1000)
		r.node.Generate(b, 1, r.addr)
		announced := time.Now()
		head++
		deadline := time.After(30 * time.Second)
		for {
			mu.Lock()
			at, ok := got[head]
			mu.Unlock()
			if ok {
				lat = append(lat, at.Sub(announced))
				break
			}
			select {
			case <-arrived:
			case <-deadline:
				b.Fatalf("block %d: no webhook within 30 s\n%s", head, s.stderr)
			}
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	p50, p99 := lat[len(lat)/2], lat[(len(lat)*99+99)/100-1]
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	fmt.Printf("btcd: block announced to webhook delivered over %d blocks (--fetch-interval %s): p50 %.0f ms, p99 %.0f ms, max %.0f ms\n",
		len(lat), interval, ms(p50), ms(p99), ms(lat[len(lat)-1]))
}
