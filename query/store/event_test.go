package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// eventSeed is the seed of a generated test: ADDRD_EVENTS_SEED or the clock.
func eventSeed(t *testing.T) uint64 {
	if s := os.Getenv("ADDRD_EVENTS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ADDRD_EVENTS_SEED=%q: %v", s, err)
		}
		return n
	}
	return uint64(time.Now().UnixNano())
}

// seen is an event as the model knows it.
type seen struct {
	kind, address string
	block         uint64
}

func (s seen) String() string {
	return fmt.Sprintf("%s %s@%d", s.kind, s.address[len(s.address)-2:], s.block)
}

// TestEventFeedGenerated drives the store with a seeded run of
// subscribes, unsubscribes, stored blocks with statement rows, reorgs
// and syncs, and checks every account's feed, read in pages of random
// sizes, against a model: exactly the events of its addresses written
// while it was subscribed, in the order written, each once; rewinds
// retract every row they delete; resubscribing replays nothing.
func TestEventFeedGenerated(t *testing.T) {
	seed := eventSeed(t)
	t.Logf("seed %d (ADDRD_EVENTS_SEED)", seed)
	each(t, func(t *testing.T, db *store.DB, clk *testenv.Clock) {
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(seed, 23))
		addrs := []string{addrA, addrB, addrC, "0x00000000000000000000000000000000000000dd"}
		var accounts []int64
		for i := range 3 {
			k := newKey(t, db, fmt.Sprintf("acct%d", i))
			accounts = append(accounts, k.AccountID)
		}
		var (
			log  []seen                // every event written, in order
			from = map[[2]int]int{}    // (account, address) subscribed: len(log) then
			rows = map[uint64][]seen{} // stored statement rows by block
			head = uint64(0)           // the checkpoint
		)
		for range 5 {
			head++
			if err := db.StoreBlocks(ctx, "ETH", []query.BlockData{{Block: block(head)}}); err != nil {
				t.Fatal(err)
			}
		}
		check := func(step int) {
			t.Helper()
			for ai, acct := range accounts {
				var want []seen
				for i, e := range log {
					ad := slices.Index(addrs, e.address)
					if w, ok := from[[2]int{ai, ad}]; ok && i >= w {
						want = append(want, e)
					}
				}
				var got []seen
				after := int64(-1)
				for {
					p, err := db.AccountEvents(ctx, acct, after, query.EventFilter{}, 1+rng.IntN(4))
					if err != nil {
						t.Fatalf("seed %d step %d: AccountEvents: %v", seed, step, err)
					}
					for _, e := range p.Events {
						if e.ID <= after {
							t.Fatalf("seed %d step %d: event %d after position %d", seed, step, e.ID, after)
						}
						got = append(got, seen{e.Kind, e.Address, e.Block})
					}
					if p.Through <= after && len(p.Events) == 0 {
						break
					}
					after = p.Through
				}
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: account %d feed\n got %v\nwant %v", seed, step, ai, got, want)
				}
			}
		}
		for step := range 60 {
			switch op := rng.IntN(10); {
			case op < 2:
				ai, ad := rng.IntN(len(accounts)), rng.IntN(len(addrs))
				created, err := db.Subscribe(ctx, accounts[ai], "ETH", addrs[ad])
				if err != nil {
					t.Fatal(err)
				}
				if created {
					from[[2]int{ai, ad}] = len(log)
				}
			case op < 3:
				ai, ad := rng.IntN(len(accounts)), rng.IntN(len(addrs))
				err := db.Unsubscribe(ctx, accounts[ai], "ETH", addrs[ad])
				if err != nil && !errors.Is(err, query.ErrNotFound) {
					t.Fatal(err)
				}
				delete(from, [2]int{ai, ad})
			case op < 8:
				head++
				var changes []query.BalanceChange
				for _, a := range addrs {
					if rng.IntN(2) == 0 {
						continue
					}
					c := query.BalanceChange{Chain: "ETH", Address: a, Block: head, Time: block(head).Time, Amount: query.AmountOf(5),
						BalanceAfter: query.AmountOf(5), Causes: []query.Cause{{Kind: "transaction", TxHash: "0x01", Amount: query.AmountOf(5)}}}
					if rng.IntN(4) == 0 {
						c.Checked, c.Difference = true, query.AmountOf(1)
					}
					changes = append(changes, c)
					log = append(log, seen{query.EventBalanceChange, a, head})
					if c.Checked {
						log = append(log, seen{query.EventUnreconciled, a, head})
					}
					rows[head] = append(rows[head], seen{query.EventRetracted, a, head})
				}
				if err := db.StoreBlocks(ctx, "ETH", []query.BlockData{{Block: block(head), Changes: changes}}); err != nil {
					t.Fatal(err)
				}
			case op < 9:
				to := head - uint64(rng.IntN(3))
				if to < 5 {
					continue
				}
				for n := head; n > to; n-- {
					log = append(log, rows[n]...)
					delete(rows, n)
				}
				head = to
				if err := db.Rewind(ctx, "ETH", to); err != nil {
					t.Fatal(err)
				}
			default:
				a := addrs[rng.IntN(len(addrs))]
				if _, err := db.Tracked(ctx, "ETH"); err != nil {
					t.Fatal(err)
				}
				// Only an address with a subscriber is active; its state
				// is told whatever it was.
				if err := db.MarkSynced(ctx, "ETH", []string{a}, head, head+1); err != nil {
					t.Fatal(err)
				}
				for ai := range accounts {
					if _, ok := from[[2]int{ai, slices.Index(addrs, a)}]; ok {
						log = append(log, seen{query.EventSubscriptionState, a, head})
						break
					}
				}
			}
			if step%10 == 9 {
				check(step)
			}
		}
		check(60)
	})
}

// TestEventData checks the data of each kind of event.
func TestEventData(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, clk *testenv.Clock) {
		ctx := context.Background()
		k, _, _ := db.CreateAPIKey(ctx, "alice")
		if _, err := db.Subscribe(ctx, k.AccountID, "ETH", addrA); err != nil {
			t.Fatal(err)
		}
		if err := db.MarkSynced(ctx, "ETH", []string{addrA}, 1, 2); err != nil {
			t.Fatal(err)
		}
		c := query.BalanceChange{Chain: "ETH", Address: addrA, Block: 2, Time: block(2).Time, Amount: query.AmountOf(-7), BalanceAfter: query.AmountOf(3),
			Causes: []query.Cause{{Kind: "fee", TxHash: "0xab", Amount: query.AmountOf(-7)}}, Checked: true, Reconciled: true, Internals: true}
		if err := db.StoreBlocks(ctx, "ETH", []query.BlockData{{Block: block(1)}, {Block: block(2), Changes: []query.BalanceChange{c}}}); err != nil {
			t.Fatal(err)
		}
		// The node's marks, capped at the checkpoint: the row becomes final.
		if err := db.SetFinality(ctx, "ETH", query.Finality{Safe: 5, Finalized: 4, Source: query.FinalityByNode}); err != nil {
			t.Fatal(err)
		}
		// An operator's rewind under the finalized mark lowers it.
		if err := db.Rewind(ctx, "ETH", 1); err != nil {
			t.Fatal(err)
		}
		if fin, err := db.Finality(ctx, "ETH"); err != nil || fin != (query.Finality{Safe: 1, Finalized: 1, Source: query.FinalityByNode}) {
			t.Fatalf("finality after the rewind = %+v, %v", fin, err)
		}
		p, err := db.AccountEvents(ctx, k.AccountID, -1, query.EventFilter{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		row := `{"chain":"ETH","address":"` + addrA + `","block_number":2,"time":"2023-11-14T22:13:44Z","contract":"","token_id":"","amount":"-7","balance_after":"3","causes":[{"kind":"fee","transaction_hash":"0xab","amount":"-7","withdrawal_index":null,"validator_index":null}],"reconciled":true,"difference":"0","traced":true,"finality":`
		want := []struct{ kind, data string }{
			{query.EventSubscriptionState, `{"chain":"ETH","address":"` + addrA + `","state":"ACTIVE","history_start_block":2}`},
			{query.EventBalanceChange, row + `"latest"}`},
			{query.EventFinalized, `{"chain":"ETH","address":"` + addrA + `","block_number":2,"from_block":1,"balance_changes":1,"source":"node"}`},
			{query.EventRetracted, row + `"finalized"}`},
		}
		if len(p.Events) != len(want) {
			t.Fatalf("events = %+v", p.Events)
		}
		for i, w := range want {
			e := p.Events[i]
			if e.Kind != w.kind || e.Data != w.data || !json.Valid([]byte(e.Data)) || !e.Created.Equal(clk.Now().Truncate(time.Microsecond)) {
				t.Errorf("event %d = %s %s at %v\nwant %s %s", i, e.Kind, e.Data, e.Created, w.kind, w.data)
			}
		}
		// Filters.
		p, err = db.AccountEvents(ctx, k.AccountID, -1, query.EventFilter{Kinds: []string{query.EventRetracted}}, 10)
		if err != nil || len(p.Events) != 1 || p.Events[0].Kind != query.EventRetracted {
			t.Fatalf("kind filter = %+v, %v", p, err)
		}
		p, err = db.AccountEvents(ctx, k.AccountID, -1, query.EventFilter{Address: addrB}, 10)
		if err != nil || len(p.Events) != 0 {
			t.Fatalf("address filter = %+v, %v", p, err)
		}
		// Retention: a cursor under the pruned positions is refused; one
		// at or over them reads on.
		clk.Advance(time.Hour)
		n, err := db.PruneEvents(ctx, clk.Now())
		if err != nil || n != 4 {
			t.Fatalf("PruneEvents = %d, %v; want 4", n, err)
		}
		if _, err := db.AccountEvents(ctx, k.AccountID, 2, query.EventFilter{}, 10); !errors.Is(err, query.ErrEventsPruned) {
			t.Fatalf("AccountEvents after a pruned position: %v, want ErrEventsPruned", err)
		}
		if p, err := db.AccountEvents(ctx, k.AccountID, 4, query.EventFilter{}, 10); err != nil || len(p.Events) != 0 || p.Through != 4 {
			t.Fatalf("AccountEvents at the last pruned position = %+v, %v", p, err)
		}
		if p, err := db.AccountEvents(ctx, k.AccountID, -1, query.EventFilter{}, 10); err != nil || p.Through != 4 {
			t.Fatalf("AccountEvents from the start after pruning = %+v, %v", p, err)
		}
	})
}

// TestEventFeedConcurrentWriters follows the feed while two chains'
// fetchers and a backfill write events at once: the follower sees every
// event exactly once, in position order. Without the event lock a
// PostgreSQL sequence hands out positions in one order and commits them
// in another, and a follower skips the late ones.
func TestEventFeedConcurrentWriters(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, clk *testenv.Clock) {
		ctx := context.Background()
		k, _, _ := db.CreateAPIKey(ctx, "alice")
		for _, chain := range []string{"ETH", "POL", "BNB"} {
			if _, err := db.Subscribe(ctx, k.AccountID, chain, addrA); err != nil {
				t.Fatal(err)
			}
		}
		const blocks = 40
		var wg sync.WaitGroup
		errs := make(chan error, 3)
		for _, chain := range []string{"ETH", "POL", "BNB"} {
			wg.Go(func() {
				for n := uint64(1); n <= blocks; n++ {
					c := query.BalanceChange{Chain: chain, Address: addrA, Block: n, Amount: query.AmountOf(1), BalanceAfter: query.AmountOf(int64(n))}
					if err := db.StoreBlocks(ctx, chain, []query.BlockData{{Block: block(n), Changes: []query.BalanceChange{c}}}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		var got []query.Event
		after := int64(-1)
		for finished := false; ; {
			select {
			case <-done:
				finished = true
			default:
			}
			p, err := db.AccountEvents(ctx, k.AccountID, after, query.EventFilter{}, 7)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, p.Events...)
			if finished && len(p.Events) == 0 && p.Through == after {
				break
			}
			after = p.Through
		}
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if len(got) != 3*blocks {
			t.Fatalf("the follower saw %d events, want %d", len(got), 3*blocks)
		}
		next := map[string]uint64{}
		for i, e := range got {
			if i > 0 && e.ID <= got[i-1].ID {
				t.Fatalf("event %d at position %d after %d", i, e.ID, got[i-1].ID)
			}
			if next[e.Chain]++; e.Block != next[e.Chain] {
				t.Fatalf("event %d: %s block %d, want %d", i, e.Chain, e.Block, next[e.Chain])
			}
		}
	})
}
