package api_test

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/events"
)

// feed is a decoded page of GET /v1/events.
type feed struct {
	Events []struct {
		ID, Type, Timestamp, Cursor string
		Data                        map[string]any
	}
	NextCursor string `json:"next_cursor"`
}

func (e *env) feed(k key, query string) feed {
	e.t.Helper()
	r := e.do("GET", "/v1/events"+query, k)
	e.want(r, 200, 0)
	var f feed
	if err := json.Unmarshal(r.body, &f); err != nil {
		e.t.Fatalf("%s: %v", r.body, err)
	}
	return f
}

// storeChange stores block n of chain with a statement row of each address.
func (e *env) storeChange(chain string, n uint64, addrs ...string) {
	e.t.Helper()
	var cs []query.BalanceChange
	for _, a := range addrs {
		cs = append(cs, query.BalanceChange{Chain: chain, Address: a, Block: n, Time: time.Unix(1_700_000_000, 0), Amount: query.AmountOf(7),
			BalanceAfter: query.AmountOf(7), Causes: []query.Cause{{Kind: "transaction", TxHash: "0x01", Amount: query.AmountOf(7)}}})
	}
	b := query.Block{Number: n, Hash: "0xb" + string(rune('0'+n)), ParentHash: "0xb" + string(rune('0'+n-1))}
	if err := e.db.StoreBlocks(context.Background(), chain, []query.BlockData{{Block: b, Changes: cs}}); err != nil {
		e.t.Fatal(err)
	}
}

func TestEvents(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrA, e.alice), 200, 0)
		e.want(e.do("PUT", "/v1/chains/TST/addresses/"+addrA, e.alice), 200, 0)
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrB, e.bob), 200, 0)
		e.storeChange("ETH", 1, addrA, addrB)
		e.storeChange("TST", 1, addrA)
		e.storeChange("ETH", 2, addrA)

		f := e.feed(e.alice, "")
		if len(f.Events) != 3 {
			t.Fatalf("alice's feed: %+v", f)
		}
		ev := f.Events[0]
		if ev.Type != query.EventBalanceChange || ev.Data["address"] != addrA || ev.Data["chain"] != "ETH" ||
			ev.Data["block_number"] != 1.0 || ev.Data["amount"] != "7" || !strings.HasPrefix(ev.ID, "evt_") {
			t.Fatalf("first event %+v", ev)
		}
		if f.NextCursor != f.Events[2].Cursor {
			t.Fatalf("next_cursor %s, last event's cursor %s", f.NextCursor, f.Events[2].Cursor)
		}
		// bob sees his address only.
		if b := e.feed(e.bob, ""); len(b.Events) != 1 || b.Events[0].Data["address"] != addrB {
			t.Fatalf("bob's feed: %+v", b)
		}
		// Pages of one, from the start, give the same events.
		var ids []string
		for c := ""; ; {
			q := "?page_size=1"
			if c != "" {
				q += "&after=" + c
			}
			p := e.feed(e.alice, q)
			if len(p.Events) == 0 {
				break
			}
			ids = append(ids, p.Events[0].ID)
			c = p.NextCursor
		}
		if strings.Join(ids, ",") != f.Events[0].ID+","+f.Events[1].ID+","+f.Events[2].ID {
			t.Fatalf("paged %v", ids)
		}
		// Filters.
		if p := e.feed(e.alice, "?chain=TST"); len(p.Events) != 1 || p.Events[0].Data["chain"] != "TST" {
			t.Fatalf("chain=TST: %+v", p)
		}
		if p := e.feed(e.alice, "?address="+addrB); len(p.Events) != 0 {
			t.Fatalf("address=B for alice: %+v", p)
		}
		if p := e.feed(e.alice, "?kind=balance_change_retracted,subscription_state"); len(p.Events) != 0 {
			t.Fatalf("kind filter: %+v", p)
		}
		// Block ranges: alice's events are of blocks 1 (ETH, TST) and 2.
		for _, tc := range []struct {
			q    string
			want []float64
		}{
			{"?start_block=2", []float64{2}},
			{"?end_block=1", []float64{1, 1}},
			{"?start_block=1&end_block=1&chain=ETH", []float64{1}},
			{"?start_block=3", nil},
			{"?start_block=0&end_block=9223372036854775807", []float64{1, 1, 2}},
		} {
			var got []float64
			for _, ev := range e.feed(e.alice, tc.q).Events {
				got = append(got, ev.Data["block_number"].(float64))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("events%s: blocks %v, want %v", tc.q, got, tc.want)
			}
		}
		// Read on from the end: nothing, and the same cursor.
		if p := e.feed(e.alice, "?after="+f.NextCursor); len(p.Events) != 0 || p.NextCursor != f.NextCursor {
			t.Fatalf("after the end: %+v", p)
		}
		// Unsubscribed, an address's new events are not seen; subscribed
		// again, they resume without the old ones.
		e.want(e.do("DELETE", "/v1/chains/ETH/addresses/"+addrA, e.alice), 200, 0)
		e.storeChange("ETH", 3, addrA)
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrA, e.alice), 200, 0)
		e.storeChange("ETH", 4, addrA)
		p := e.feed(e.alice, "?after="+f.NextCursor)
		if len(p.Events) != 1 || p.Events[0].Data["block_number"] != 4.0 {
			t.Fatalf("after resubscribing: %+v", p)
		}
		if all := e.feed(e.alice, ""); len(all.Events) != 2 { // TST's, and block 4
			t.Fatalf("from the start after resubscribing: %+v", all)
		}

		// Bad input.
		bobs := e.feed(e.bob, "").NextCursor
		for _, q := range []string{"?after=x", "?after=" + url.QueryEscape(bobs), "?after=" + bobs + "A", "?page_size=-1",
			"?wait_seconds=21", "?wait_seconds=x", "?chain=NOPE", "?address=0x12", "?kind=balance", "?kind=", "?foo=1",
			"?start_block=-1", "?end_block=x", "?start_block=9223372036854775808", "?start_block=5&end_block=4",
			"?after=" + f.NextCursor + "&after=" + f.NextCursor} {
			r := e.do("GET", "/v1/events"+q, e.alice)
			e.want(r, 400, 3)
		}
		r := e.do("GET", "/v1/events?after="+url.QueryEscape(bobs), e.alice)
		if !strings.Contains(string(r.body), "another requester") {
			t.Fatalf("another's cursor: %s", r.body)
		}
		// Past retention: code 11.
		if _, err := e.db.PruneEvents(context.Background(), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		e.want(e.do("GET", "/v1/events?after="+f.Events[0].Cursor, e.alice), 400, 11)
		if p := e.feed(e.alice, ""); len(p.Events) != 0 || p.NextCursor == "" {
			t.Fatalf("from the start after pruning: %+v", p)
		}
		e.want(e.do("GET", "/v1/events", key{}), 401, 16)
	})
}

// TestEventsLongPoll: a long poll waits without holding one of the
// store's turns (MaxInFlight 1: another request is served meanwhile),
// and answers with the first event once it is written.
func TestEventsLongPoll(t *testing.T) {
	var waiting atomic.Pointer[chan struct{}]
	ch := make(chan struct{})
	waiting.Store(&ch)
	var w *events.Watcher
	e := newEnvWith(t, t.TempDir()+"/addrd.db", func(c *api.Config) {
		c.MaxInFlight = 1
		w = events.NewWatcher(func(ctx context.Context) (int64, error) {
			if p := waiting.Swap(nil); p != nil {
				close(*p) // the long poll waits
			}
			return c.Store.(interface {
				LastEventID(context.Context) (int64, error)
			}).LastEventID(ctx)
		}, time.Hour)
		c.Watcher = w
	})
	e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrA, e.alice), 200, 0)
	start := e.feed(e.alice, "").NextCursor
	got := make(chan feed, 1)
	go func() { got <- e.feed(e.alice, "?wait_seconds=20&after="+start) }()
	<-ch
	// The waiting poll holds no turn: this request is served.
	e.want(e.do("GET", "/v1/addresses", e.alice), 200, 0)
	e.storeChange("ETH", 1, addrA)
	w.Notify()
	f := <-got
	if len(f.Events) != 1 || f.Events[0].Data["block_number"] != 1.0 {
		t.Fatalf("long poll: %+v", f)
	}
	// Nothing comes: an empty page when the wait is over.
	if p := e.feed(e.alice, "?wait_seconds=1&after="+f.NextCursor); len(p.Events) != 0 || p.NextCursor != f.NextCursor {
		t.Fatalf("long poll with nothing new: %+v", p)
	}
}
