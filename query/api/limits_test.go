package api_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wharfhq/wharf/internal/clientip"
	"github.com/wharfhq/wharf/internal/rpcstatus"
	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/store"
)

// countingStore counts the credential checks that reach the store.
type countingStore struct {
	query.Store
	auths atomic.Int64
}

func (c *countingStore) Authenticate(ctx context.Context, id, secret string) (query.Account, error) {
	c.auths.Add(1)
	return c.Store.Authenticate(ctx, id, secret)
}

// behindProxy makes the test server's peer (127.0.0.1) a trusted proxy,
// so that X-Forwarded-For names the client.
func behindProxy(t *testing.T, cfg *api.Config) {
	t.Helper()
	r, err := clientip.Parse([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.ClientIP = r
}

// wantTooMany checks a 429 ResourceExhausted answer with a Retry-After.
func wantTooMany(t *testing.T, e *env, r response) {
	t.Helper()
	e.want(r, 429, int(rpcstatus.ResourceExhausted))
	if m := r.json(t); m["status"] != rpcstatus.ResourceExhausted.String() {
		t.Fatalf("status %v, want %s", m["status"], rpcstatus.ResourceExhausted)
	}
	if n, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || n < 1 {
		t.Fatalf("Retry-After %q, want whole seconds", r.header.Get("Retry-After"))
	}
}

func TestAuthFailuresPerClient(t *testing.T) {
	var counted *countingStore
	e := newEnvWith(t, filepath.Join(t.TempDir(), "addrd.db"), func(cfg *api.Config) {
		behindProxy(t, cfg)
		counted = &countingStore{Store: cfg.Store}
		cfg.Store = counted
		cfg.AuthFailuresPerClient = api.Limit{Rate: 1e-3, Burst: 3}
		cfg.AuthFailuresPerKey = api.Limit{Rate: -1}
	})
	const attacker, owner = "198.51.100.7", "203.0.113.9"
	wrong := key{e.alice.id, "wrong"}
	for range 3 {
		e.want(e.doFrom(attacker, "GET", "/v1/addresses", wrong), 401, int(rpcstatus.Unauthenticated))
	}
	before := counted.auths.Load()
	// Throttled: wrong or right, other ids too, from the attacker's
	// address, and without asking the store.
	wantTooMany(t, e, e.doFrom(attacker, "GET", "/v1/addresses", wrong))
	wantTooMany(t, e, e.doFrom(attacker, "GET", "/v1/addresses", e.bob))
	if n := counted.auths.Load() - before; n != 0 {
		t.Errorf("a throttled client cost %d credential checks, want none", n)
	}
	// The key's owner, from elsewhere, is not throttled.
	e.want(e.doFrom(owner, "GET", "/v1/addresses", e.alice), 200, 0)
	// An IPv6 client is counted by its /64.
	for i := range 3 {
		e.want(e.doFrom(fmt.Sprintf("2001:db8:1:2::%x", i+1), "GET", "/v1/addresses", wrong), 401, int(rpcstatus.Unauthenticated))
	}
	wantTooMany(t, e, e.doFrom("2001:db8:1:2:ffff::1", "GET", "/v1/addresses", wrong))
	e.want(e.doFrom("2001:db8:1:3::1", "GET", "/v1/addresses", e.alice), 200, 0)
	if !strings.Contains(e.logbuf.String(), `"client":"198.51.100.7"`) {
		t.Errorf("the log does not name the client behind the proxy:\n%s", e.logbuf)
	}
}

func TestAuthFailuresPerKey(t *testing.T) {
	e := newEnvWith(t, filepath.Join(t.TempDir(), "addrd.db"), func(cfg *api.Config) {
		behindProxy(t, cfg)
		cfg.AuthFailuresPerClient = api.Limit{Rate: -1}
		cfg.AuthFailuresPerKey = api.Limit{Rate: 1e-3, Burst: 3}
	})
	wrong := key{e.alice.id, "wrong"}
	// Wrong secrets for one id from many addresses.
	for i := range 3 {
		e.want(e.doFrom(fmt.Sprintf("198.51.100.%d", i+1), "GET", "/v1/addresses", wrong), 401, int(rpcstatus.Unauthenticated))
	}
	wantTooMany(t, e, e.doFrom("198.51.100.50", "GET", "/v1/addresses", wrong))
	// The owner, with the right secret, still gets in; other keys too.
	e.want(e.doFrom("203.0.113.9", "GET", "/v1/addresses", e.alice), 200, 0)
	e.want(e.doFrom("198.51.100.50", "GET", "/v1/addresses", e.bob), 200, 0)
}

func TestUntrustedForwardedForIgnored(t *testing.T) {
	e := newEnvWith(t, filepath.Join(t.TempDir(), "addrd.db"), func(cfg *api.Config) {
		cfg.AuthFailuresPerClient = api.Limit{Rate: 1e-3, Burst: 2}
		cfg.AuthFailuresPerKey = api.Limit{Rate: -1}
	})
	wrong := key{e.alice.id, "wrong"}
	// No trusted proxy: a forged X-Forwarded-For does not escape the limit.
	for i := range 2 {
		e.want(e.doFrom(fmt.Sprintf("198.51.100.%d", i+1), "GET", "/v1/addresses", wrong), 401, int(rpcstatus.Unauthenticated))
	}
	wantTooMany(t, e, e.doFrom("198.51.100.99", "GET", "/v1/addresses", wrong))
	if strings.Contains(e.logbuf.String(), "198.51.100") {
		t.Errorf("the log believed an untrusted X-Forwarded-For:\n%s", e.logbuf)
	}
}

func TestKeyRate(t *testing.T) {
	var counted *countingStore
	e := newEnvWith(t, filepath.Join(t.TempDir(), "addrd.db"), func(cfg *api.Config) {
		counted = &countingStore{Store: cfg.Store}
		cfg.Store = counted
		cfg.KeyRate = api.Limit{Rate: 1e-3, Burst: 2}
	})
	for range 2 {
		e.want(e.do("GET", "/v1/addresses", e.alice), 200, 0)
	}
	wantTooMany(t, e, e.do("GET", "/v1/addresses", e.alice))
	before := counted.auths.Load()
	wantTooMany(t, e, e.do("GET", "/v1/addresses", e.alice))
	if n := counted.auths.Load() - before; n != 0 {
		t.Errorf("a throttled key cost %d credential checks, want none", n)
	}
	e.want(e.do("GET", "/v1/addresses", e.bob), 200, 0)
	// Wrong secrets for alice's id spend none of her requests.
	e2 := newEnvWith(t, filepath.Join(t.TempDir(), "addrd.db"), func(cfg *api.Config) {
		cfg.KeyRate = api.Limit{Rate: 1e-3, Burst: 2}
		cfg.AuthFailuresPerClient = api.Limit{Rate: -1}
		cfg.AuthFailuresPerKey = api.Limit{Rate: -1}
	})
	for range 5 {
		e2.want(e2.do("GET", "/v1/addresses", key{e2.alice.id, "wrong"}), 401, int(rpcstatus.Unauthenticated))
	}
	e2.want(e2.do("GET", "/v1/addresses", e2.alice), 200, 0)
}

func TestMaxSubscriptions(t *testing.T) {
	for _, d := range testenv.DBs() {
		t.Run(d.Name, func(t *testing.T) {
			const most = 3
			e := newEnvWith(t, d.DSN(t), nil, store.WithMaxSubscriptions(most))
			path := func(i int) string { return fmt.Sprintf("/v1/chains/ETH/addresses/0x%040x", i) }
			for i := range most {
				e.want(e.do("PUT", path(i), e.alice), 200, 0)
			}
			r := e.do("PUT", path(most), e.alice)
			e.want(r, 429, int(rpcstatus.ResourceExhausted))
			e.want(e.do("PUT", path(0), e.alice), 200, 0)  // already subscribed: idempotent
			e.want(e.do("PUT", path(most), e.bob), 200, 0) // per requester
			e.want(e.do("DELETE", path(0), e.alice), 200, 0)
			e.want(e.do("PUT", path(most), e.alice), 200, 0)
			if m := e.do("GET", "/v1/addresses", e.alice).json(t); m["total_size"] != float64(most) {
				t.Fatalf("total_size %v, want %d", m["total_size"], most)
			}

			// At once, the places left are taken once each.
			var wg sync.WaitGroup
			var ok atomic.Int64
			for i := range 10 {
				wg.Go(func() {
					req := e.do("PUT", path(100+i), e.bob)
					if req.status == 200 {
						ok.Add(1)
					} else if req.status != 429 {
						t.Errorf("status %d: %s", req.status, req.body)
					}
				})
			}
			wg.Wait()
			if got := ok.Load(); got != most-1 {
				t.Errorf("%d concurrent subscriptions taken, want %d", got, most-1)
			}
		})
	}
}
