package fetch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/fetch"
)

// TestEventsFollowReorgs drives the fetcher over a seeded run of
// transfers and forks of 1 to 3 blocks, with --confirmations 0 and 3, and
// replays alice's event feed: every balance_change adds a row, every
// balance_change_retracted removes one that was added (same amounts),
// and what remains is exactly her addresses' statement. With 0
// confirmations the forks retract rows; with 3 no retraction is ever
// written, since no stored block is ever replaced.
func TestEventsFollowReorgs(t *testing.T) {
	seed := testenv.Seed(t)
	if s := os.Getenv("ADDRD_EVENTS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (ADDRD_EVENTS_SEED)", seed)
	for _, confirmations := range []uint64{0, 3} {
		t.Run(fmt.Sprintf("confirmations=%d", confirmations), func(t *testing.T) {
			testenv.ForEachDB(t, func(t *testing.T, dsn string) {
				ctx := context.Background()
				rng := rand.New(rand.NewPCG(seed, confirmations))
				// A shallow reorg bound, so that blocks become final (by
				// depth: the node has no finalized tag) within the run.
				e := newEnv(t, dsn, fetch.Config{Confirmations: confirmations, MaxReorgDepth: 8})
				// The dev chain finalizes every 32nd block and these forks
				// may cross one, which no real chain does (the fetcher
				// refuses it): the node here has no finalized tag.
				e.useSource(unfinal{e.fault, e.fault}, fetch.InternalsAuto)
				d := e.dev
				for i := range 3 {
					e.subscribe(d.Accounts[i])
				}
				// A chain longer than the confirmations, where the fetcher
				// starts; then 4 blocks more, so that no fork below (at
				// most 3 under the head) reaches under the first stored
				// block: the fetcher refuses those (the subscriptions'
				// opening balances lie under them).
				for range 4 {
					d.Commit()
				}
				e.catchUp()
				for range 4 {
					d.Commit()
				}
				e.catchUp()
				retractions := 0
				for round := range 12 {
					for range 1 + rng.IntN(3) {
						from, to := rng.IntN(len(d.Accounts)), rng.IntN(len(d.Accounts))
						e.must(d.Transfer(ctx, from, d.Accounts[to], big.NewInt(int64(1000+rng.IntN(1000)))))
						d.Commit()
					}
					e.catchUp()
					if rng.IntN(2) == 0 {
						head, _ := d.Head()
						depth := uint64(1 + rng.IntN(3))
						if err := d.Fork(d.BlockHash(head - depth)); err != nil {
							t.Fatal(err)
						}
						e.must(d.Transfer(ctx, rng.IntN(len(d.Accounts)), d.Accounts[rng.IntN(3)], big.NewInt(int64(5000+round))))
						for range depth + 1 {
							d.Commit()
						}
						e.catchUp()
					}
					retractions = e.checkFeed(seed, 3) // the whole feed, from the start
				}
				switch {
				case confirmations == 0 && retractions == 0:
					t.Fatalf("seed %d: no retraction with 0 confirmations: the forks moved no stored row", seed)
				case confirmations > 0 && retractions > 0:
					t.Fatalf("seed %d: %d retractions with %d confirmations", seed, retractions, confirmations)
				}
				if fin, _ := e.db.Finality(ctx, chain); fin.Finalized == 0 || fin.Source != query.FinalityByDepth {
					t.Fatalf("seed %d: finality %+v: nothing became final by depth", seed, fin)
				}
				t.Logf("%d retractions", retractions)
			})
		})
	}
}

// checkFeed replays alice's feed against the statements of her first n
// accounts and returns the retractions in it. Each row is final once:
// stored final (its balance_change says finalized) or covered by one
// finalized event, which counts it; a final row is never retracted; and
// the rows the feed holds final are those at or under the finalized
// mark.
func (e *env) checkFeed(seed uint64, n int) int {
	e.t.Helper()
	ctx := context.Background()
	type key struct {
		addr, contract string
		block          uint64
	}
	type row struct{ amount, after string }
	live := map[key]row{}
	final := map[key]bool{}
	retractions := 0
	for after := int64(-1); ; {
		p, err := e.db.AccountEvents(ctx, e.account, after, query.EventFilter{}, 1000)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, ev := range p.Events {
			var c struct {
				Address, Contract string
				BlockNumber       uint64 `json:"block_number"`
				Amount            string
				BalanceAfter      string `json:"balance_after"`
				Finality          string
				FromBlock         uint64 `json:"from_block"`
				BalanceChanges    int    `json:"balance_changes"`
			}
			if err := json.Unmarshal([]byte(ev.Data), &c); err != nil {
				e.t.Fatal(err)
			}
			k, r := key{c.Address, c.Contract, c.BlockNumber}, row{c.Amount, c.BalanceAfter}
			switch ev.Kind {
			case query.EventBalanceChange:
				if _, ok := live[k]; ok {
					e.t.Fatalf("seed %d: event %d stores %v twice", seed, ev.ID, k)
				}
				live[k] = r
				final[k] = c.Finality == query.FinalityFinalized
			case query.EventRetracted:
				if live[k] != r {
					e.t.Fatalf("seed %d: event %d retracts %v %v, the feed holds %v", seed, ev.ID, k, r, live[k])
				}
				if final[k] {
					e.t.Fatalf("seed %d: event %d retracts %v, which was final", seed, ev.ID, k)
				}
				delete(live, k)
				delete(final, k)
				retractions++
			case query.EventFinalized:
				n := 0
				for lk := range live {
					if lk.addr != c.Address || lk.block < c.FromBlock || lk.block > c.BlockNumber {
						continue
					}
					if final[lk] {
						e.t.Fatalf("seed %d: event %d finalizes %v, final already", seed, ev.ID, lk)
					}
					final[lk] = true
					n++
				}
				if n != c.BalanceChanges || n == 0 {
					e.t.Fatalf("seed %d: event %d finalizes %d rows of %s in blocks %d to %d, says %d", seed, ev.ID, n, c.Address, c.FromBlock, c.BlockNumber, c.BalanceChanges)
				}
			}
		}
		if len(p.Events) == 0 && p.Through == after {
			break
		}
		after = p.Through
	}
	fin, err := e.db.Finality(ctx, chain)
	if err != nil {
		e.t.Fatal(err)
	}
	rows := 0
	for i := range n {
		a := addr(e.dev.Accounts[i])
		changes, err := e.db.AccountBalanceChanges(ctx, e.account, chain, a, nil, 10000)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, c := range changes {
			k := key{a, c.Contract, c.Block}
			if got, ok := live[k]; !ok || got != (row{c.Amount.String(), c.BalanceAfter.String()}) {
				e.t.Fatalf("seed %d: statement row %v %s/%s; the feed says %v (%v)", seed, k, c.Amount, c.BalanceAfter, got, ok)
			}
			if want := c.Block <= fin.Finalized; final[k] != want {
				e.t.Fatalf("seed %d: statement row %v: final %v in the feed, the finalized mark is %d", seed, k, final[k], fin.Finalized)
			}
			rows++
		}
	}
	if rows != len(live) {
		e.t.Fatalf("seed %d: the feed holds %d rows, the statements %d", seed, len(live), rows)
	}
	return retractions
}
