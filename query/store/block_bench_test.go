package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// BenchmarkStoreBlocks is the fetcher's write: StoreBlocks of a chunk of
// 16 blocks of OP-stack traffic as the head follower stores them on
// op-geth (BenchmarkFetchOPGeth's chain: 20 transfers and a deposit a
// block, each transfer to one of 10 subscribed addresses, with its fee's
// L1 and operator parts), on each database, onto a chain of 256 blocks
// stored before. Beside the time a block it reports the CPU a block
// costs this process (SQLite runs in it) and, on PostgreSQL, the
// database's backends: the figure the load moves least.
func BenchmarkStoreBlocks(b *testing.B) {
	for _, d := range testenv.DBs() {
		b.Run(d.Name, func(b *testing.B) {
			ctx := context.Background()
			db, err := store.Open(ctx, d.DSN(b))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			c := newOPChain(10)
			for range 16 {
				if err := db.StoreBlocks(ctx, "OP", c.next(16)); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			b.ReportAllocs()
			var blocks int
			var cpu, pgCPU time.Duration
			for b.Loop() {
				b.StopTimer()
				chunk := c.next(16)
				// The backends' CPU is read before and after the chunk,
				// and before listing them again: the listings' is not
				// the chunk's. A backend new since is the chunk's whole.
				pids := backends(b, db)
				pg0 := pidCPU(pids)
				self0 := selfCPU(b)
				b.StartTimer()
				if err := db.StoreBlocks(ctx, "OP", chunk); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				cpu += selfCPU(b) - self0
				pg1 := pidCPU(pids)
				for pid, t := range pidCPU(backends(b, db)) {
					if _, ok := pg0[pid]; !ok {
						pg1[pid] = t
					}
				}
				for pid, t := range pg1 {
					pgCPU += t - pg0[pid]
				}
				blocks += len(chunk)
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(blocks), "µs/block")
			b.ReportMetric(ms(cpu)/float64(blocks), "cpu-ms/block")
			if db.Postgres() {
				b.ReportMetric(ms(pgCPU)/float64(blocks), "pg-cpu-ms/block")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// opChain makes the blocks of BenchmarkFetchOPGeth's chain as the EVM
// family hands them to the store: the matched transactions with their
// details, the statement rows and heads of the subscribed addresses, and
// their balances at a chunk's last block.
type opChain struct {
	number   uint64
	dests    []string
	senders  []string
	nonce    []uint64
	balances map[string]query.Amount
}

func newOPChain(dests int) *opChain {
	c := &opChain{balances: map[string]query.Amount{}}
	for i := range dests {
		c.dests = append(c.dests, fmt.Sprintf("0x%040x", 0xbe7c5000000+i))
	}
	for i := range 4 {
		c.senders = append(c.senders, fmt.Sprintf("0x%040x", 0xacc0000000+i))
	}
	c.nonce = make([]uint64, len(c.senders))
	return c
}

// hash is a hash as a chain's, random: a table keyed by it takes its
// rows at pages all over it, not at its end.
func hash(kind string, n uint64, i int) string {
	h := sha256.Sum256([]byte(kind + strconv.FormatUint(n, 10) + "/" + strconv.Itoa(i)))
	return "0x" + hex.EncodeToString(h[:])
}

// next returns the next n blocks.
func (c *opChain) next(n int) []query.BlockData {
	out := make([]query.BlockData, 0, n)
	for range n {
		out = append(out, c.block())
	}
	touched := map[string]bool{}
	for _, d := range out {
		for _, ch := range d.Changes {
			touched[ch.Address] = true
		}
	}
	last := out[len(out)-1]
	for _, a := range c.dests {
		if touched[a] {
			out[len(out)-1].Balances = append(out[len(out)-1].Balances, query.Balance{Chain: "OP", Address: a, Asset: query.AssetNative,
				Symbol: "ETH", Name: "Ether", Decimals: 18, Amount: c.balances[a], Block: last.Number})
		}
	}
	return out
}

func (c *opChain) block() query.BlockData {
	c.number++
	n := c.number
	blk := query.Block{Number: n, Hash: hash("b", n, 0), ParentHash: hash("b", n-1, 0), Time: time.Unix(1_700_000_000+int64(n)*2, 0).UTC()}
	d := query.BlockData{Block: blk}
	moves := map[string][]query.Cause{}
	var cumulative uint64
	// Index 0 is the L1-info deposit, which touches no subscribed address.
	for i := range 20 {
		from, to := i%len(c.senders), c.dests[(int(n)+i)%len(c.dests)]
		h := hash("a", n, i+1)
		exec, l1, op := query.AmountOf(21_000*1_000_000_252), query.AmountOf(int64(1_234_567+i)), query.AmountOf(int64(21_000*7))
		fee := exec.Add(l1).Add(op)
		value := query.AmountOf(int64(1 + i))
		cumulative += 21_000
		t := query.Transaction{Chain: "OP", Hash: h, BlockNumber: n, BlockHash: blk.Hash, BlockTime: blk.Time, Index: uint(i + 1),
			Status: query.StatusSuccess, From: c.senders[from], To: to, Value: value, Fee: fee,
			FeeParts: query.FeeParts{Execution: exec, L1: l1, Operator: op},
			Transfers: []query.Transfer{{Position: -1, Asset: query.AssetNative, From: c.senders[from], To: to, Amount: value,
				Kind: query.KindTransaction}},
			Detail: []byte(`{"nonce":` + strconv.FormatUint(c.nonce[from], 10) + `,"type":2,"gas_limit":100000,"gas_used":21000,` +
				`"effective_gas_price":"1000000252","method":"","contract_address":"","input":"0x","cumulative_gas_used":` +
				strconv.FormatUint(cumulative, 10) + `,"revert_reason":""}`)}
		c.nonce[from]++
		d.Txs = append(d.Txs, t)
		moves[to] = append(moves[to], query.Cause{Kind: query.KindTransaction, TxHash: h, Amount: value, Ref: "value"})
	}
	// A user deposit between two subscribed addresses: it mints to its
	// sender and moves value, and costs nothing.
	from, to := c.dests[int(n)%len(c.dests)], c.dests[int(n+1)%len(c.dests)]
	h := hash("d", n, 0)
	mint, value := query.AmountOf(1e15), query.AmountOf(1e14)
	d.Txs = append(d.Txs, query.Transaction{Chain: "OP", Hash: h, BlockNumber: n, BlockHash: blk.Hash, BlockTime: blk.Time, Index: 21,
		Status: query.StatusSuccess, From: from, To: to, Value: value, Mint: mint,
		Transfers: []query.Transfer{{Position: -1, Asset: query.AssetNative, From: from, To: to, Amount: value, Kind: query.KindTransaction}},
		Detail: []byte(`{"nonce":0,"type":126,"gas_limit":100000,"gas_used":21000,"effective_gas_price":"0","method":"",` +
			`"contract_address":"","input":"0x","cumulative_gas_used":` + strconv.FormatUint(cumulative+21_000, 10) + `,"revert_reason":""}`)})
	moves[from] = append(moves[from], query.Cause{Kind: query.KindMint, TxHash: h, Amount: mint},
		query.Cause{Kind: query.KindTransaction, TxHash: h, Amount: value.Neg(), Ref: "value"})
	moves[to] = append(moves[to], query.Cause{Kind: query.KindTransaction, TxHash: h, Amount: value, Ref: "value"})
	for _, a := range c.dests {
		causes := moves[a]
		if len(causes) == 0 {
			continue
		}
		var sum query.Amount
		for _, cs := range causes {
			sum = sum.Add(cs.Amount)
		}
		after := c.balances[a].Add(sum)
		c.balances[a] = after
		d.Changes = append(d.Changes, query.BalanceChange{Chain: "OP", Address: a, Block: n, Time: blk.Time, Amount: sum, BalanceAfter: after,
			Causes: causes, Internals: true})
		d.Heads = append(d.Heads, query.StatementHead{Address: a, Block: n, Balance: after})
	}
	return d
}

// selfCPU is the CPU time this process has used.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backends lists the PostgreSQL client backends of db's database; none
// on SQLite.
func backends(b *testing.B, db *store.DB) []int {
	if !db.Postgres() {
		return nil
	}
	rows, err := db.Bun().QueryContext(context.Background(),
		"SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'")
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var pids []int
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			b.Fatal(err)
		}
		pids = append(pids, pid)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return pids
}

// pidCPU is the CPU time each of pids has used (from /proc), by pid; a
// process gone is left out.
func pidCPU(pids []int) map[int]time.Duration {
	out := make(map[int]time.Duration, len(pids))
	for _, pid := range pids {
		cpu, err := testenv.ProcessCPU(pid)
		if err != nil {
			continue // gone
		}
		out[pid] = cpu
	}
	return out
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }
