package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/webhook"
)

// TestWebhookKillDeliveringReplica: two addrd serve replicas share a
// PostgreSQL database and its webhook endpoints. The one delivering is
// killed with SIGKILL while a delivery is in flight; the other takes the
// endpoint over when its lease runs out and delivers the rest: every
// event arrives, in order from the last one recorded (at least once: the
// few the dead replica sent but had not recorded come again), never two
// deliveries to the endpoint at once.
func TestWebhookKillDeliveringReplica(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key, _, err := db.CreateAPIKey(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	const addr = "0x00000000000000000000000000000000000000aa"
	if _, err := db.Subscribe(ctx, key.AccountID, "ETH", addr); err != nil {
		t.Fatal(err)
	}

	var (
		mu       sync.Mutex
		got      []int64 // positions received, in order
		inflight int
		most     int
		hold     = make(chan struct{}) // the 20th delivery waits on it
		held     = make(chan struct{})
	)
	secret, _ := webhook.NewSecret(rand.Reader)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := make([]byte, 0, 1024)
		buf := make([]byte, 1024)
		for {
			n, err := r.Body.Read(buf)
			body = append(body, buf[:n]...)
			if err != nil {
				break
			}
		}
		wh, _ := standardwebhooks.NewWebhook(secret)
		if err := wh.Verify(body, r.Header); err != nil {
			t.Errorf("delivery does not verify: %v", err)
		}
		var pos int64
		fmt.Sscanf(r.Header.Get("webhook-id"), "evt_%d", &pos)
		mu.Lock()
		inflight++
		most = max(most, inflight)
		n := len(got)
		mu.Unlock()
		if n == 19 {
			select {
			case <-held:
			default:
				close(held)
				<-hold // the replica is killed meanwhile
			}
		}
		mu.Lock()
		inflight--
		got = append(got, pos)
		mu.Unlock()
	}))
	defer recv.Close()
	hook, err := db.CreateWebhook(ctx, query.Webhook{Account: key.AccountID, URL: recv.URL, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}

	args := []string{"--db", dsn, "--chain", "ETH=http://127.0.0.1:1", "--fetch=false", "--lease-ttl", "2s",
		"--webhook-timeout", "1s", "--webhook-allow-http", "--webhook-allow-private"}
	replicas := []*proc{startProc(t, args...), startProc(t, args...)}

	const total = 60
	var want []int64
	for n := uint64(1); n <= total; n++ {
		c := query.BalanceChange{Chain: "ETH", Address: addr, Block: n, Amount: query.AmountOf(1), BalanceAfter: query.AmountOf(int64(n))}
		b := query.Block{Number: n, Hash: fmt.Sprintf("0x%d", n), ParentHash: fmt.Sprintf("0x%d", n-1)}
		if err := db.StoreBlocks(ctx, "ETH", []query.BlockData{{Block: b, Changes: []query.BalanceChange{c}}}); err != nil {
			t.Fatal(err)
		}
		last, _ := db.LastEventID(ctx)
		want = append(want, last)
	}
	select {
	case <-held:
	case <-time.After(60 * time.Second):
		t.Fatal("no 20th delivery in 60 s")
	}
	var holder string
	if err := db.Bun().NewRaw("SELECT lease_holder FROM webhooks WHERE id = ?", hook.ID).Scan(ctx, &holder); err != nil {
		t.Fatal(err)
	}
	var killed *proc
	for _, p := range replicas {
		if p.holder == holder {
			killed = p
		}
	}
	if killed == nil {
		t.Fatalf("the endpoint is leased to %q, no replica of %v", holder, replicas)
	}
	killed.cmd.Process.Kill()
	<-killed.done
	close(hold)
	eventually(t, 60*time.Second, "every event delivered after the kill", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, w := range want {
			if !slices.Contains(got, w) {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	restarts := 0
	for i := 1; i < len(got); i++ {
		if got[i] > got[i-1]+1 {
			t.Fatalf("a gap: %d after %d in %v", got[i], got[i-1], got)
		}
		if got[i] <= got[i-1] {
			restarts++
		}
	}
	if restarts > 1 || most > 1 {
		t.Fatalf("%d restarts, %d deliveries at once: %v", restarts, most, got)
	}
	var survivor string
	if err := db.Bun().NewRaw("SELECT lease_holder FROM webhooks WHERE id = ?", hook.ID).Scan(ctx, &survivor); err != nil {
		t.Fatal(err)
	}
	if survivor == killed.holder {
		t.Fatalf("the killed replica still holds the endpoint")
	}
	t.Logf("%d deliveries for %d events; %s killed, %s took over", len(got), total, killed.holder, survivor)
}
