package evm_test

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/evm/devchain"
	"github.com/wharfhq/wharf/query/evm/devchain/devchaintest"
)

// The EVM Reader's report of a node that is down: every read the core
// makes fails with query.ErrUnavailable, which the core counts as a node
// error and retries, and never returns fewer blocks, which the core would
// take for the node's answer.

// readerCall is one read the core makes of a Reader.
type readerCall struct {
	name string
	call func(ctx context.Context, r chain.Reader) error
}

// readerCalls are the reads of the seam the EVM Reader answers: the
// Reader's own and those of its capabilities.
func readerCalls(tracked string) []readerCall {
	set := map[string]bool{tracked: true}
	return []readerCall{
		{"ChainID", func(ctx context.Context, r chain.Reader) error { _, err := r.ChainID(ctx); return err }},
		{"Head", func(ctx context.Context, r chain.Reader) error { _, err := r.Head(ctx); return err }},
		{"Headers", func(ctx context.Context, r chain.Reader) error { _, err := r.Headers(ctx, 0, 1); return err }},
		{"Activity", func(ctx context.Context, r chain.Reader) error {
			_, err := r.Activity(ctx, chain.Query{From: 0, To: 1, Tracked: set, Pass: "head"})
			return err
		}},
		{"Balances", func(ctx context.Context, r chain.Reader) error {
			_, err := r.(chain.BalanceReader).Balances(ctx, 0, []query.BalanceQuery{{Address: tracked}})
			return err
		}},
		{"ProbeInternals", func(ctx context.Context, r chain.Reader) error {
			_, err := r.(chain.Internals).ProbeInternals(ctx)
			return err
		}},
		{"FullHistory", func(ctx context.Context, r chain.Reader) error {
			_, err := r.(chain.HistoryReach).FullHistory(ctx)
			return err
		}},
		{"Finalized", func(ctx context.Context, r chain.Reader) error {
			_, err := r.(query.Finalizer).Finalized(ctx)
			return err
		}},
	}
}

// TestReaderNodeDown: with nothing listening at the node's port (a
// closed loopback port), every read fails with query.ErrUnavailable, its
// error naming the call and saying the node is unreachable (the report
// the fetcher logs and Health returns).
func TestReaderNodeDown(t *testing.T) {
	ctx := t.Context()
	r, err := evm.Family{}.Dial(ctx, "http://127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)))
	if err != nil {
		t.Fatalf("Dial = %v; over HTTP it makes no connection, so a closed port is no error yet", err)
	}
	for _, c := range readerCalls(fresh()) {
		t.Run(c.name, func(t *testing.T) {
			err := c.call(ctx, r)
			if !errors.Is(err, query.ErrUnavailable) {
				t.Fatalf("%s of a node that is down = %v, want query.ErrUnavailable", c.name, err)
			}
			if msg := err.Error(); !strings.Contains(msg, "eth_") || !strings.HasSuffix(msg, "node unreachable") {
				t.Errorf("%s's error %q does not name the call and say the node is unreachable", c.name, err)
			}
		})
	}
}

// dying forwards JSON-RPC requests to a node. Once armed with a count,
// it stops the node before forwarding the request of that number (the
// first is 1): the node dies in the middle of a read. A request it
// cannot forward is cut off, as a dead node's connection is.
type dying struct {
	proxy *httputil.ReverseProxy
	stop  func() error

	mu      sync.Mutex
	n, at   int
	stopped bool
}

// newDying returns a dying proxy to the node at node, and its URL.
func newDying(t *testing.T, node string, stop func() error) (*dying, string) {
	t.Helper()
	u, err := url.Parse(node)
	if err != nil {
		t.Fatal(err)
	}
	d := &dying{proxy: httputil.NewSingleHostReverseProxy(u), stop: stop}
	d.proxy.ErrorHandler = func(http.ResponseWriter, *http.Request, error) { panic(http.ErrAbortHandler) }
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return d, srv.URL
}

// arm resets the count of requests and has the node stopped at request
// number at (never with 0); it returns the requests counted since the
// last arm.
func (d *dying) arm(at int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.n
	d.n, d.at, d.stopped = 0, at, false
	return n
}

func (d *dying) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	d.n++
	if d.n == d.at && !d.stopped {
		d.stopped = true
		if err := d.stop(); err != nil {
			d.mu.Unlock()
			panic(fmt.Sprintf("stopping the node: %v", err))
		}
	}
	d.mu.Unlock()
	d.proxy.ServeHTTP(w, r)
}

// dyingNode is a node for TestReaderNodeDies: its URL, how to stop and
// start it again, blocks from to to that each pay tracked.
type dyingNode struct {
	url         string
	stop, start func() error
	from, to    uint64
	tracked     string
}

// TestReaderNodeDies: a node that dies in the middle of an Activity read
// (after some of its calls were answered) makes Activity fail with
// query.ErrUnavailable, returning no blocks; once the node is back, the
// same read returns what it returned before the node died.
func TestReaderNodeDies(t *testing.T) {
	nodes := []struct {
		name  string
		start func(t *testing.T) dyingNode
	}{
		{"devchain", func(t *testing.T) dyingNode {
			dev := devchaintest.Start(t, devchain.Config{})
			to := fresh()
			from, _ := dev.Head()
			for i := range 3 {
				if _, err := dev.Transfer(t.Context(), 1, common.HexToAddress(to), big.NewInt(int64(5+i))); err != nil {
					t.Fatal(err)
				}
				dev.Commit()
			}
			head, _ := dev.Head()
			return dyingNode{url: dev.URL, stop: dev.StopHTTP, start: dev.StartHTTP, from: from + 1, to: head, tracked: to}
		}},
		{"geth", func(t *testing.T) dyingNode {
			g := testenv.NewGeth(t)
			to := fresh()
			var first, last uint64
			for i := range 3 {
				rcpt, err := g.Send(t.Context(), map[string]any{"from": g.Account, "to": to, "value": fmt.Sprintf("0x%x", 5+i)})
				if err != nil {
					t.Fatal(err)
				}
				hex, _ := rcpt["blockNumber"].(string)
				n, err := strconv.ParseUint(strings.TrimPrefix(hex, "0x"), 16, 64)
				if err != nil {
					t.Fatalf("the receipt's block number %q: %v", hex, err)
				}
				if i == 0 {
					first = n
				}
				last = n
			}
			stop := func() error { g.Stop(); return nil }
			return dyingNode{url: g.URL, stop: stop, start: g.Start, from: first, to: last, tracked: to}
		}},
	}
	for _, n := range nodes {
		t.Run(n.name, func(t *testing.T) {
			ctx := t.Context()
			node := n.start(t)
			d, addr := newDying(t, node.url, node.stop)
			q := chain.Query{From: node.from, To: node.to, Tracked: map[string]bool{node.tracked: true}, Pass: "head"}
			// A Reader learns how to read (its dense and sparse modes)
			// from what it read: a fresh one for each read makes the
			// same calls.
			dial := func() chain.Reader {
				r, err := evm.Family{}.Dial(ctx, addr)
				if err != nil {
					t.Fatal(err)
				}
				in := r.(chain.Internals)
				api, err := in.ProbeInternals(ctx)
				if err != nil {
					t.Fatalf("ProbeInternals = %q, %v", api, err)
				}
				in.UseInternals(api)
				return r
			}
			r := dial()
			d.arm(0)
			want, err := r.Activity(ctx, q)
			if err != nil || len(want) != int(node.to-node.from+1) {
				t.Fatalf("Activity of blocks %d to %d with the node up: %d blocks, %v", node.from, node.to, len(want), err)
			}
			calls := d.arm(0)
			if calls < 2 {
				t.Fatalf("Activity made %d calls to the node: none to die in the middle of", calls)
			}
			r = dial()
			at := calls/2 + 1 // after calls/2 were answered
			d.arm(at)
			got, err := r.Activity(ctx, q)
			if !errors.Is(err, query.ErrUnavailable) || got != nil {
				t.Fatalf("Activity with the node dying at call %d of %d = %d blocks, %v; want none and query.ErrUnavailable", at, calls, len(got), err)
			}
			t.Logf("the node died at call %d of %d: %v", at, calls, err)
			if n := d.arm(0); n < at {
				t.Fatalf("Activity made %d calls, fewer than the %d at which the node died", n, at)
			}
			if err := node.start(); err != nil {
				t.Fatal(err)
			}
			again, err := dial().Activity(ctx, q)
			if err != nil || !reflect.DeepEqual(again, want) {
				t.Errorf("Activity once the node is back = %d blocks, %v; want the %d read before it died", len(again), err, len(want))
			}
		})
	}
}
