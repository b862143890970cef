package utxo_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/chain"
)

// BenchmarkReaderSpeed compares the reader's blocks/s over
// UTXO_BENCH_BLOCKS blocks (default 100) of 20 payments each, every one
// to a tracked address, on btcd with a bare loop of getblock verbosity 2
// and the getrawtransaction of the prevouts those blocks spend, the two
// alternated in the same run, and reports both and their ratio.
func BenchmarkReaderSpeed(tb *testing.B) {
	blocks := envCount("UTXO_BENCH_BLOCKS", 100)
	t := testing.TB(tb)
	const perBlock = 20
	ctx := context.Background()
	c := newRegtestChain(t, testenv.DialectBtcd)
	// Outputs of 0.1 coin to the payer (mature ones: the chain starts at
	// 101 blocks).
	coins := c.fanOut(t, blocks*perBlock, 400, 1000_0000)
	var start uint64
	c.node.MustCall(t, &start, "getblockcount")
	start++
	tracked := map[string]bool{}
	key, _ := btcec.PrivKeyFromBytes([]byte("bench-recipient-key-0123456789ab"))
	to := c.p2wpkh(key.PubKey())
	tracked[to.String] = true
	for b := range blocks {
		for i := range perBlock {
			k := coins[b*perBlock+i]
			if _, err := c.send(ctx, []coin{k}, wire.NewTxOut(500_0000, to.Script), wire.NewTxOut(499_0000, c.payer.Script)); err != nil {
				t.Fatal(err)
			}
		}
		c.node.Generate(t, 1, "")
	}
	end := start + uint64(blocks) - 1

	bare := func() time.Duration { return c.bareLoop(t, start, end) }
	reader := func() time.Duration {
		t0 := time.Now()
		acts, err := c.reader.Activity(ctx, chain.Query{From: start, To: end, Tracked: tracked})
		if err != nil || len(acts) != blocks {
			t.Fatalf("Activity: %d blocks, %v", len(acts), err)
		}
		return time.Since(t0)
	}
	tb.ResetTimer()
	var bareTime, readerTime time.Duration
	for range tb.N {
		bareTime += bare()
		readerTime += reader()
	}
	bps := func(d time.Duration) float64 { return float64(tb.N*blocks) / d.Seconds() }
	tb.ReportMetric(bps(readerTime), "reader-blocks/s")
	tb.ReportMetric(bps(bareTime), "bare-blocks/s")
	tb.ReportMetric(bps(readerTime)/bps(bareTime), "ratio")
}

// fanOut spends coinbases of the payer into n outputs of value to the
// payer, per a transaction, mined in one block, and returns them.
func (c *regtestChain) fanOut(t testing.TB, n, per int, value int64) []coin {
	t.Helper()
	ctx := context.Background()
	c.node.Generate(t, n/per+1, "")
	var coins []coin
	for len(coins) < n {
		cb := c.coinbase(t, c.next)
		c.next++
		var outs []*wire.TxOut
		for range per {
			outs = append(outs, wire.NewTxOut(value, c.payer.Script))
		}
		txid, err := c.send(ctx, []coin{cb}, outs...)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := chainhash.NewHashFromStr(txid)
		for i := range outs {
			coins = append(coins, coin{op: *wire.NewOutPoint(h, uint32(i)), value: value, key: c.key, script: c.payer.Script})
		}
	}
	c.node.Generate(t, 1, "")
	return coins
}

// envCount is the count the environment variable name sets, def when it
// sets none.
func envCount(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// bareLoop reads blocks from to to as the plainest client would (each
// block's hash, the block with its transactions, then every transaction
// its inputs spend, once) and returns how long it took: the reference the
// benchmarks measure the reader and the fetcher against.
func (c *regtestChain) bareLoop(t testing.TB, start, end uint64) time.Duration {
	t0 := time.Now()
	for h := start; h <= end; h++ {
		var hash string
		c.node.MustCall(t, &hash, "getblockhash", h)
		var blk struct {
			RawTx []struct {
				Vin []struct {
					TxID string `json:"txid"`
				} `json:"vin"`
			} `json:"rawtx"`
		}
		c.node.MustCall(t, &blk, "getblock", hash, 2)
		seen := map[string]bool{}
		for _, tx := range blk.RawTx {
			for _, in := range tx.Vin {
				if in.TxID != "" && !seen[in.TxID] {
					seen[in.TxID] = true
					var raw json.RawMessage
					c.node.MustCall(t, &raw, "getrawtransaction", in.TxID, 1)
				}
			}
		}
	}
	return time.Since(t0)
}
