package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/ethclient"
)

// BenchmarkServeDevLatency measures, on addrd serve --dev, the time from
// a PUT to the first balances (at most 5 s), and from a
// transfer touching the address being mined to the API listing it. One
// measurement whatever b.N: run with -benchtime=1x.
func BenchmarkServeDevLatency(b *testing.B) {
	ctx := context.Background()
	srv := startServe(b, "--dev", "--log-level", "warn")
	chains, accounts, keys := srv.printed("dev chain "), srv.printed("dev account "), srv.printed("dev api key ")
	if len(chains) != 1 || len(accounts) == 0 || len(keys) != 1 {
		b.Fatalf("dev chain %q, accounts %q, keys %q", chains, accounts, keys)
	}
	rpcURL, account := strings.Fields(chains[0])[0], accounts[0]
	get := func(method, path string) []byte {
		_, body := srv.do(b, keys[0], method, path)
		return body
	}
	low := strings.ToLower(account)
	// Polling the API for an outcome at a fine grain: what is measured.
	until := func(deadline time.Time, ok func() bool) bool {
		for time.Now().Before(deadline) {
			if ok() {
				return true
			}
			time.Sleep(10 * time.Millisecond)
		}
		return false
	}

	b.ResetTimer()
	put := time.Now()
	get("PUT", "/v1/chains/ETH/addresses/"+account)
	if !until(put.Add(30*time.Second), func() bool {
		var r struct{ Balances []json.RawMessage }
		return json.Unmarshal(get("GET", "/v1/chains/ETH/addresses/"+low+"/balances"), &r) == nil && len(r.Balances) > 0
	}) {
		b.Fatal("no balances within 30 s")
	}
	toBalances := time.Since(put)

	node, err := ethclient.DialContext(ctx, rpcURL)
	if err != nil {
		b.Fatal(err)
	}
	defer node.Close()
	var lat []time.Duration
	seen, _ := node.BlockNumber(ctx)
	for len(lat) < 5 {
		// Wait for the producer to mine a block with a transfer of the account.
		var mined time.Time
		var number uint64
		if !until(time.Now().Add(60*time.Second), func() bool {
			n, err := node.BlockNumber(ctx)
			if err != nil || n <= seen {
				return false
			}
			mined = time.Now()
			seen = n
			blk, err := node.BlockByNumber(ctx, new(big.Int).SetUint64(n))
			if err != nil {
				return false
			}
			for _, tx := range blk.Transactions() {
				if tx.To() != nil && strings.EqualFold(tx.To().Hex(), account) {
					number = n
					return true
				}
			}
			return false
		}) {
			b.Fatal("the dev chain mined no transfer to the account in 60 s")
		}
		if !until(mined.Add(30*time.Second), func() bool {
			var r struct {
				Transactions []struct {
					BlockNumber uint64 `json:"block_number"`
				}
			}
			body := get("GET", "/v1/chains/ETH/addresses/"+low+"/transactions?page_size=1")
			return json.Unmarshal(body, &r) == nil && len(r.Transactions) == 1 && r.Transactions[0].BlockNumber >= number
		}) {
			b.Fatalf("block %d not listed within 30 s of being mined", number)
		}
		lat = append(lat, time.Since(mined))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(toBalances.Seconds(), "s-put-to-balances")
	b.ReportMetric(lat[len(lat)/2].Seconds(), "s-mined-to-listed-p50")
	b.ReportMetric(lat[len(lat)-1].Seconds(), "s-mined-to-listed-max")
	fmt.Printf("dev: PUT to first balances %s (want <= 5s); mined to listed over %d transfers: median %s, max %s\n",
		toBalances.Round(time.Millisecond), len(lat), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	srv.stop()
}
