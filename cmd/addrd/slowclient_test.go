package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// The slow-client generator: one tenant (the attacker) opens connections
// that trickle request bodies, pipeline requests whose answers it never
// reads, or reads them a few bytes at a time, and holds webhook endpoints
// that answer just under the delivery timeout; meanwhile another tenant
// (the victim) reads its balances and receives its webhook deliveries,
// and the generator measures how long both take. Every connection is to
// an `addrd serve` on loopback, and the run is bounded in time and count.

// slowKinds are the attacker's kinds of connection.
var slowKinds = []string{"trickle", "unread", "slowread"}

// slowAttack is one run of the generator.
type slowAttack struct {
	addr   string // the server's host:port
	auth   string // the attacker's Authorization header value
	rnd    *rand.Rand
	conns  int           // attacker connections
	length time.Duration // how long the attack lasts
}

// run starts the attacker's connections, each of a kind drawn from rnd,
// and ends them all when ctx ends; it returns how many of each it ran.
func (a slowAttack) run(ctx context.Context, t *testing.T, wg *sync.WaitGroup) map[string]int {
	counts := make(map[string]int)
	for range a.conns {
		kind := slowKinds[a.rnd.IntN(len(slowKinds))]
		counts[kind]++
		pause := time.Duration(50+a.rnd.IntN(400)) * time.Millisecond
		conn, err := net.Dial("tcp", a.addr)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer conn.Close()
			stop := context.AfterFunc(ctx, func() { conn.Close() })
			defer stop()
			switch kind {
			case "trickle":
				a.trickle(ctx, conn, pause)
			case "unread":
				a.pipeline(conn)
				<-ctx.Done()
			case "slowread":
				a.pipeline(conn)
				a.slowRead(ctx, conn, pause)
			}
		})
	}
	return counts
}

// trickle sends a webhook's creation with its body a byte at a time,
// one every pause.
func (a slowAttack) trickle(ctx context.Context, conn net.Conn, pause time.Duration) {
	body := `{"url":"http://127.0.0.1:1/trickled","description":"` + strings.Repeat("x", 200) + `"}`
	fmt.Fprintf(conn, "POST /v1/webhooks HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		a.addr, a.auth, len(body))
	tick := time.NewTicker(pause)
	defer tick.Stop()
	for i := range len(body) {
		if _, err := conn.Write([]byte{body[i]}); err != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// pipeline sends 400 requests for the attacker's largest page at once,
// on a connection whose receive buffer is small.
func (a slowAttack) pipeline(conn net.Conn) {
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetReadBuffer(2048)
	}
	var b strings.Builder
	for range 400 { // 12 MB of answers, more than the kernel's buffers hold
		fmt.Fprintf(&b, "GET /v1/addresses?page_size=1000 HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\n\r\n", a.addr, a.auth)
	}
	conn.Write([]byte(b.String()))
}

// slowRead reads 64 bytes every pause until ctx ends.
func (a slowAttack) slowRead(ctx context.Context, conn net.Conn, pause time.Duration) {
	buf := make([]byte, 64)
	tick := time.NewTicker(pause)
	defer tick.Stop()
	for {
		if _, err := conn.Read(buf); err != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// p99 is the 99th percentile of ds (the largest of fewer than 100).
func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*99/100)]
}

// slowTargets are the victim's bounds while the attack runs: the
// targets (50 ms, 1 s) with WHARF_SLOW_STRICT=1 on a quiet machine, and
// looser ones in make test, where a loaded machine or the race detector
// slow every request; the unprotected server fails both by seconds.
func slowTargets() (balances, delivery time.Duration) {
	if os.Getenv("WHARF_SLOW_STRICT") == "1" {
		return 50 * time.Millisecond, time.Second
	}
	return 750 * time.Millisecond, 3 * time.Second
}

// slowLength is how long the attack lasts: WHARF_SLOW_SECONDS, 4 s in
// make test.
func slowLength(t *testing.T) time.Duration {
	if v := os.Getenv("WHARF_SLOW_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 600 {
			t.Fatalf("WHARF_SLOW_SECONDS=%q: want 1 to 600", v)
		}
		return time.Duration(n) * time.Second
	}
	return 4 * time.Second
}

// TestSlowClients: with one tenant's slow connections and slow webhook
// endpoints, another tenant's balances answer and its deliveries arrive
// within the targets, on both databases.
func TestSlowClients(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		rnd := testenv.Rand(t, 1)
		db, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		attacker, attackerSecret, err := db.CreateAPIKey(ctx, "attacker")
		if err != nil {
			t.Fatal(err)
		}
		victim, victimSecret, err := db.CreateAPIKey(ctx, "victim")
		if err != nil {
			t.Fatal(err)
		}
		// The attacker's list of subscriptions is its large page.
		var attackerAddrs []string
		for i := range 300 {
			a := fmt.Sprintf("0x%040x", 0xa0000+i)
			attackerAddrs = append(attackerAddrs, a)
			if _, err := db.Subscribe(ctx, attacker.AccountID, "ETH", a); err != nil {
				t.Fatal(err)
			}
		}
		const victimAddr = "0x00000000000000000000000000000000000000bb"
		if _, err := db.Subscribe(ctx, victim.AccountID, "ETH", victimAddr); err != nil {
			t.Fatal(err)
		}

		// Endpoints: the attacker's answer after 2.5 s (the timeout is 3 s),
		// the victim's at once, noting when each event arrived.
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			select {
			case <-time.After(2500 * time.Millisecond): // the slowness is what is tested
			case <-r.Context().Done():
			}
		}))
		defer slow.Close()
		var mu sync.Mutex
		arrived := make(map[string]time.Time) // webhook-id → arrival
		delivered := make(chan struct{}, 1)   // a delivery arrived
		fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			mu.Lock()
			if _, ok := arrived[r.Header.Get("webhook-id")]; !ok {
				arrived[r.Header.Get("webhook-id")] = time.Now()
			}
			mu.Unlock()
			select {
			case delivered <- struct{}{}:
			default:
			}
		}))
		defer fast.Close()

		p := startProc(t, "--db", dsn, "--chain", "ETH=http://127.0.0.1:1", "--fetch=false", "--log-level", "warn",
			"--webhook-allow-http", "--webhook-allow-private", "--webhook-timeout", "3s")
		attackerKey := attacker.ID + ":" + attackerSecret
		victimKey := victim.ID + ":" + victimSecret
		endpoints := 0
		for i := range 20 {
			status, body := p.post(t, attackerKey, "/v1/webhooks", fmt.Sprintf(`{"url":"%s/%d"}`, slow.URL, i))
			if status != http.StatusOK {
				t.Logf("attacker's endpoint %d: %d %s", i, status, body)
				break
			}
			endpoints++
		}
		if status, body := p.post(t, victimKey, "/v1/webhooks", `{"url":"`+fast.URL+`/victim"}`); status != http.StatusOK {
			t.Fatalf("victim's endpoint: %d %s", status, body)
		}

		// The victim's reads before the attack: what the machine gives
		// without it.
		readBalances := func(client *http.Client) (time.Duration, error) {
			req, _ := http.NewRequest("GET", p.base+"/v1/chains/ETH/addresses/"+victimAddr+"/balances", nil)
			req.SetBasicAuth(victim.ID, victimSecret)
			start := time.Now()
			resp, err := client.Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			return time.Since(start), err
		}
		client := &http.Client{Timeout: 10 * time.Second}
		var quiet []time.Duration
		for start := time.Now(); time.Since(start) < time.Second && len(quiet) < 1000; {
			d, err := readBalances(client)
			if err != nil {
				t.Fatalf("the victim's balances before the attack: %v", err)
			}
			quiet = append(quiet, d)
		}

		attack := slowAttack{addr: strings.TrimPrefix(p.base, "http://"), rnd: rnd, conns: 40, length: slowLength(t),
			auth: "Basic " + base64.StdEncoding.EncodeToString([]byte(attackerKey))}
		actx, cancel := context.WithTimeout(ctx, attack.length)
		defer cancel()
		var wg sync.WaitGroup
		counts := attack.run(actx, t, &wg)

		// Blocks every 100 ms, each with a statement row of every address:
		// an event for each of the attacker's endpoints and the victim's.
		written := make(map[int64]time.Time) // event position → when stored
		wg.Go(func() {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for n := uint64(1); actx.Err() == nil; n++ {
				cs := []query.BalanceChange{{Chain: "ETH", Address: victimAddr, Block: n, Amount: query.AmountOf(1), BalanceAfter: query.AmountOf(int64(n))}}
				for _, a := range attackerAddrs[:20] {
					cs = append(cs, query.BalanceChange{Chain: "ETH", Address: a, Block: n, Amount: query.AmountOf(1), BalanceAfter: query.AmountOf(int64(n))})
				}
				b := query.Block{Number: n, Hash: fmt.Sprintf("0x%d", n), ParentHash: fmt.Sprintf("0x%d", n-1)}
				if err := db.StoreBlocks(ctx, "ETH", []query.BlockData{{Block: b, Changes: cs}}); err != nil {
					t.Error(err)
					return
				}
				page, err := db.AccountEvents(ctx, victim.AccountID, 0, query.EventFilter{}, 1000)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, e := range page.Events {
					if _, ok := written[e.ID]; !ok {
						written[e.ID] = time.Now()
					}
				}
				mu.Unlock()
				select {
				case <-actx.Done():
				case <-tick.C:
				}
			}
		})

		// The victim reads its balances on its own connection, at most
		// 1,000 times a second of the attack, until it ends.
		var took []time.Duration
		failed := 0
		for range 1000 * int(attack.length/time.Second) {
			if actx.Err() != nil {
				break
			}
			d, err := readBalances(client)
			took = append(took, d)
			if err != nil {
				failed++
			}
		}
		cancel()
		wg.Wait()

		// Each victim event stored during the attack, while the
		// attacker's endpoints are busy, must arrive within wantDelivery
		// of being stored: the deliveries are awaited that long after the
		// last one stored, and one not there then is lost.
		wantBalances, wantDelivery := slowTargets()
		missing := func() int {
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for id := range written {
				if _, ok := arrived["evt_"+strconv.FormatInt(id, 10)]; !ok {
					n++
				}
			}
			return n
		}
		deadline := time.NewTimer(wantDelivery)
		defer deadline.Stop()
	await:
		for missing() > 0 {
			select {
			case <-delivered:
			case <-deadline.C:
				break await
			}
		}
		mu.Lock()
		var late []time.Duration
		var lost int
		for id, at := range written {
			if got, ok := arrived["evt_"+strconv.FormatInt(id, 10)]; ok {
				late = append(late, got.Sub(at))
			} else {
				lost++
				late = append(late, time.Since(at))
			}
		}
		mu.Unlock()
		t.Logf("attack %s: %v connections, %d slow endpoints; victim: %d balances reads, p99 %s, max %s, %d failed (before the attack: %d reads, p99 %s); %d deliveries, p99 %s, %d not delivered",
			attack.length, counts, endpoints, len(took), p99(took), slices.Max(took), failed, len(quiet), p99(quiet), len(late), p99(late), lost)
		if failed > 0 || p99(took) > wantBalances {
			t.Errorf("victim's balances: p99 %s (%d of %d failed), want under %s", p99(took), failed, len(took), wantBalances)
		}
		if len(late) == 0 || lost > 0 || p99(late) > wantDelivery {
			t.Errorf("victim's deliveries: %d, p99 %s (%d not delivered), want under %s", len(late), p99(late), lost, wantDelivery)
		}
	})
}

// post sends a JSON body with the API key id:secret.
func (p *proc) post(t *testing.T, key, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", p.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	id, secret, _ := strings.Cut(key, ":")
	req.SetBasicAuth(id, secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(bufio.NewReader(resp.Body))
	return resp.StatusCode, b
}
