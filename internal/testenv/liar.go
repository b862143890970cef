package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Lie is how a LyingNode lies; LieNone forwards faithfully.
type Lie int

// The lies of a LyingNode.
const (
	LieNone     Lie = iota
	LieOther        // another chain behind the same URL (Other)
	LieHashes       // wrong block hashes: every block's hash and parent hash changed
	LieBack         // the head goes back: blocks above head-Back are missing, the head says so
	LieTruncate     // every answer cut in half
	LieSlow         // every answer delayed by Slow
	LieHang         // no answer until the lie ends (or the request gives up)
	LieDown         // HTTP 503 to everything
)

var lieNames = [...]string{"none", "other chain", "wrong hashes", "going back", "truncated", "slow", "hang", "503"}

func (l Lie) String() string {
	if l >= 0 && int(l) < len(lieNames) {
		return lieNames[l]
	}
	return "lie " + strconv.Itoa(int(l))
}

// Lies are the lies a generator draws from.
var Lies = []Lie{LieOther, LieHashes, LieBack, LieTruncate, LieSlow, LieHang, LieDown}

// LyingNode is a JSON-RPC proxy on loopback in front of a real node (the
// dev chain, geth) that forwards faithfully until told to lie: it
// serves another chain behind the same URL, wrong hashes, a head going
// back, truncated and slow answers, or hangs. The hashes it makes up
// come from its seeded generator. It is safe for concurrent use.
type LyingNode struct {
	srv *http.Server
	url string

	mu    sync.Mutex
	rng   *rand.Rand
	lie   Lie
	ended chan struct{} // closed when the current lie ends (LieHang)
	// Target is the real node, Other the other chain's; Back is how many
	// blocks LieBack goes back, Slow how long LieSlow waits.
	target, other string
	back          uint64
	slow          time.Duration
	fake          map[string]string // real hash -> made-up hash, for LieHashes

	requests atomic.Int64
}

// NewLyingNode starts a LyingNode in front of the node at target, closed
// at the test's end; seed makes its made-up hashes.
func NewLyingNode(tb testing.TB, target string, seed uint64) *LyingNode {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &LyingNode{url: "http://" + ln.Addr().String(), target: target, back: 8, slow: 200 * time.Millisecond,
		rng: rand.New(rand.NewPCG(seed, 7)), ended: make(chan struct{}), fake: make(map[string]string)}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(ln)
	tb.Cleanup(func() {
		p.Tell(LieNone)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.srv.Shutdown(ctx)
	})
	return p
}

// URL is the proxy's URL, to dial instead of the node's.
func (p *LyingNode) URL() string { return p.url }

// SetOther sets the URL of the other chain LieOther serves.
func (p *LyingNode) SetOther(url string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.other = url
}

// SetBack sets how many blocks LieBack goes back, SetSlow how long
// LieSlow waits.
func (p *LyingNode) SetBack(n uint64) { p.mu.Lock(); p.back = n; p.mu.Unlock() }

// SetSlow sets how long LieSlow delays each answer.
func (p *LyingNode) SetSlow(d time.Duration) { p.mu.Lock(); p.slow = d; p.mu.Unlock() }

// Tell makes the proxy lie so from now on (LieNone: the truth again).
// Requests hanging under LieHang are let go.
func (p *LyingNode) Tell(l Lie) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lie == LieHang {
		close(p.ended)
		p.ended = make(chan struct{})
	}
	p.lie = l
	clear(p.fake)
}

// Requests is how many requests the proxy has had.
func (p *LyingNode) Requests() int64 { return p.requests.Load() }

// rpcCall is the part of a JSON-RPC request the proxy reads.
type rpcCall struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params []any           `json:"params"`
}

func (p *LyingNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	p.mu.Lock()
	lie, ended, target, back, slow := p.lie, p.ended, p.target, p.back, p.slow
	if lie == LieOther && p.other != "" {
		target = p.other
	}
	p.mu.Unlock()
	switch lie {
	case LieHang:
		select {
		case <-ended:
		case <-r.Context().Done():
		}
		http.Error(w, "hung", http.StatusBadGateway)
		return
	case LieDown:
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	case LieSlow:
		select {
		case <-time.After(slow):
		case <-r.Context().Done():
			return
		}
	}
	resp, err := http.Post(target, "application/json", bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	switch lie {
	case LieTruncate:
		out = out[:len(out)/2]
	case LieHashes:
		out = p.rewrite(body, out, func(c rpcCall, res any) any { return p.rehash(res) })
	case LieBack:
		head, err := p.realHead(target)
		if err == nil && head > back {
			out = p.rewrite(body, out, func(c rpcCall, res any) any { return goBack(c, res, head-back) })
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(resp.StatusCode)
	w.Write(out)
}

// rewrite applies f to the result of each call of a request (one call
// or a batch) and returns the answer encoded again; an answer it cannot
// read is returned as it is.
func (p *LyingNode) rewrite(req, out []byte, f func(rpcCall, any) any) []byte {
	var calls []rpcCall
	batch := len(bytes.TrimSpace(req)) > 0 && bytes.TrimSpace(req)[0] == '['
	if batch {
		if json.Unmarshal(req, &calls) != nil {
			return out
		}
	} else {
		var c rpcCall
		if json.Unmarshal(req, &c) != nil {
			return out
		}
		calls = []rpcCall{c}
	}
	byID := make(map[string]rpcCall, len(calls))
	for _, c := range calls {
		byID[string(c.ID)] = c
	}
	var answers []map[string]json.RawMessage
	if batch {
		if json.Unmarshal(out, &answers) != nil {
			return out
		}
	} else {
		var a map[string]json.RawMessage
		if json.Unmarshal(out, &a) != nil {
			return out
		}
		answers = []map[string]json.RawMessage{a}
	}
	for _, a := range answers {
		c, ok := byID[string(a["id"])]
		raw, has := a["result"]
		if !ok || !has {
			continue
		}
		var res any
		if json.Unmarshal(raw, &res) != nil {
			continue
		}
		enc, err := json.Marshal(f(c, res))
		if err == nil {
			a["result"] = enc
		}
	}
	var enc []byte
	var err error
	if batch {
		enc, err = json.Marshal(answers)
	} else {
		enc, err = json.Marshal(answers[0])
	}
	if err != nil {
		return out
	}
	return enc
}

// rehash replaces, in a result, every block hash and parent hash (and
// the block hash of receipts and logs) by a made-up one, the same for
// the same real hash while the lie lasts: a chain that chains, and is
// not the node's.
func (p *LyingNode) rehash(res any) any {
	switch v := res.(type) {
	case map[string]any:
		if v["number"] == "0x0" {
			return res // the genesis as it is: the lie is in the recent blocks
		}
		for _, k := range []string{"hash", "parentHash", "blockHash"} {
			if h, ok := v[k].(string); ok && len(h) == 66 {
				if _, isTx := v["nonce"].(string); k == "hash" && isTx && v["blockHash"] != nil {
					continue // a transaction's own hash
				}
				v[k] = p.fakeHash(h)
			}
		}
		for k, e := range v {
			if k == "transactions" || k == "logs" {
				v[k] = p.rehash(e)
			}
		}
	case []any:
		for i := range v {
			v[i] = p.rehash(v[i])
		}
	}
	return res
}

func (p *LyingNode) fakeHash(real string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f, ok := p.fake[real]; ok {
		return f
	}
	var b [32]byte
	for i := range b {
		b[i] = byte(p.rng.Uint32())
	}
	f := fmt.Sprintf("0x%x", b)
	p.fake[real] = f
	return f
}

// goBack answers as a node whose head is head: its block number says so,
// and blocks above it are missing.
func goBack(c rpcCall, res any, head uint64) any {
	switch c.Method {
	case "eth_blockNumber":
		return fmt.Sprintf("0x%x", head)
	case "eth_getBlockByNumber", "eth_getHeaderByNumber":
		if m, ok := res.(map[string]any); ok {
			if n, ok := m["number"].(string); ok {
				if v, err := strconv.ParseUint(strings.TrimPrefix(n, "0x"), 16, 64); err == nil && v > head {
					return nil
				}
			}
		}
	}
	return res
}

// realHead asks the node at target its head.
func (p *LyingNode) realHead(target string) (uint64, error) {
	resp, err := http.Post(target, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}`))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var a struct{ Result string }
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimPrefix(a.Result, "0x"), 16, 64)
}
