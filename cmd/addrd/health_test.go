package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// TestHealthLeader: /healthz and the metrics of a replica that does not
// fetch name the chain's leader, and say degraded once the chain has had
// no leader for longer than the lease TTL; /healthz is answered behind
// the API's middleware.
func TestHealthLeader(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "addrd.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := startServe(t, "--db", path, "--chain", "ETH=http://127.0.0.1:1", "--fetch=false", "--lease-ttl", "100ms")
	health := func() healthz {
		t.Helper()
		status, body := srv.do(t, "", "GET", "/healthz")
		var h healthz
		if err := json.Unmarshal(body, &h); err != nil || status != 200 {
			t.Fatalf("/healthz: %d %s", status, body)
		}
		return h
	}
	eventually(t, 10*time.Second, "degraded: nobody ever fetched", func() bool {
		h := health()
		return h.Status == "degraded" && strings.Contains(h.Fetch["ETH"], "no replica has fetched ETH")
	})

	if _, held, err := db.AcquireLease(ctx, "ETH", "elsewhere:7", time.Minute); err != nil || !held {
		t.Fatalf("AcquireLease: %v, %v", held, err)
	}
	if _, err := db.RenewLease(ctx, mustLease(t, db), time.Minute, 12); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "ok with a leader", func() bool {
		h := health()
		c := h.Chains["ETH"]
		return h.Status == "ok" && c.Leader == "elsewhere:7" && !c.ThisReplica && c.NodeHead == 12 && c.LeaseSecondsLeft > 0
	})
	// The leader stored block 20 since it last saw the node's head (12):
	// the lag is 0, never negative.
	stored := query.Block{Number: 20, Hash: "0x" + strings.Repeat("2", 64), ParentHash: "0x" + strings.Repeat("1", 64), Time: time.Unix(1_800_000_000, 0)}
	if err := db.StoreBlock(ctx, "ETH", stored, nil, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "stored head ahead of the leader's node head", func() bool {
		c := health().Chains["ETH"]
		if c.StoredHead == 20 && c.LagBlocks != 0 {
			t.Fatalf("lag_blocks %d with node head %d and stored head 20, want 0", c.LagBlocks, c.NodeHead)
		}
		return c.StoredHead == 20 && c.NodeHead == 12
	})
	_, body := srv.do(t, "", "GET", "/metrics")
	for _, want := range []string{`addrd_chain_leader_info{chain="ETH",leader="elsewhere:7"} 1`, `addrd_chain_leading{chain="ETH"} 0`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// /healthz is the API's: counted in its request metrics (and logged)
	// like every other route, not answered by a wrapper in front of it.
	counted := false
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "addrd_http_requests_total{") && strings.Contains(line, `route="/healthz"`) && strings.Contains(line, `code="200"`) {
			counted = true
		}
	}
	if !counted {
		t.Errorf("/metrics does not count the /healthz requests:\n%s", body)
	}

	if _, err := db.Bun().Exec("UPDATE fetch_leases SET expires_ms = 0"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "degraded: the lease lapsed", func() bool {
		h := health()
		return h.Status == "degraded" && strings.Contains(h.Fetch["ETH"], "no replica has held the lease") && h.Chains["ETH"].Leader == ""
	})
}

func mustLease(t *testing.T, db *store.DB) query.Lease {
	t.Helper()
	l, err := db.ChainLease(context.Background(), "ETH")
	if err != nil {
		t.Fatal(err)
	}
	return l
}
