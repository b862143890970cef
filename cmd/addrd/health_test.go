package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
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
	if _, err := db.RenewLease(ctx, mustLease(t, db), time.Minute, query.LeaderReport{Head: 12}); err != nil {
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
	// The chain's identity as the leader recorded it, CAIP-2.
	if c := health().Chains["ETH"]; c.ChainID != "" || c.Exact != "" || c.Network != "" {
		t.Fatalf("before the chain was recorded: %+v", c)
	}
	if _, err := db.RecordChainIdentity(ctx, "ETH", query.ChainIdentity{ID: "eip155:1"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "chain_id eip155:1", func() bool { return health().Chains["ETH"].ChainID == "eip155:1" })
	// With the chain ID, its network: the fee model and how far addrd's
	// books on it are proven.
	if c := health().Chains["ETH"]; c.Network != "Ethereum" || c.Fees != query.FeesEthereum || c.Exact != query.ExactShown || !strings.Contains(c.ExactNote, "geth") {
		t.Errorf("the network of eip155:1: %+v", c)
	}
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

// TestHealthReplicaSaysLeadersTrouble: a replica that does not fetch
// reads the leader's own report in the lease: what fails (a node whose
// answers are cut short), that it has not advanced for minutes (a hung
// node), and that the chain's fetching stopped; every one is degraded
// naming it. Only the leader said so; every other replica said ok, its
// lag the head the leader last recorded.
func TestHealthReplicaSaysLeadersTrouble(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		db, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		srv := startServe(t, "--db", dsn, "--chain", "ETH=http://127.0.0.1:1", "--fetch=false")
		if _, held, err := db.AcquireLease(ctx, "ETH", "elsewhere:7", time.Minute); err != nil || !held {
			t.Fatalf("AcquireLease: %v, %v", held, err)
		}
		health := func() healthz {
			t.Helper()
			status, body := srv.do(t, "", "GET", "/healthz")
			var h healthz
			if err := json.Unmarshal(body, &h); err != nil || status != 200 {
				t.Fatalf("/healthz: %d %s", status, body)
			}
			return h
		}
		for _, tc := range []struct {
			name   string
			report query.LeaderReport
			want   string // in the problem; "" for ok
		}{
			{"Advancing", query.LeaderReport{Head: 12, Progress: time.Second}, ""},
			{"Failing", query.LeaderReport{Head: 12, Progress: time.Second, Problem: "fetching ETH: failing since 2026-12-01T00:00:00Z: eth_blockNumber: unavailable: the node's answer was cut short"}, "leader elsewhere:7: fetching ETH: failing since 2026-12-01T00:00:00Z: eth_blockNumber: unavailable: the node's answer was cut short"},
			{"NotAdvancing", query.LeaderReport{Head: 12, Progress: 3 * time.Minute}, "leader elsewhere:7: has not advanced for 3m0s"},
			{"AdvancingAgain", query.LeaderReport{Head: 14, Progress: 0}, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if _, err := db.RenewLease(ctx, mustLease(t, db), time.Minute, tc.report); err != nil {
					t.Fatal(err)
				}
				eventually(t, 10*time.Second, tc.name, func() bool {
					h := health()
					if tc.want == "" {
						return h.Status == "ok" && h.Chains["ETH"].NodeHead == tc.report.Head
					}
					return h.Status == "degraded" && strings.HasPrefix(h.Fetch["ETH"], tc.want)
				})
			})
		}
		t.Run("Stopped", func(t *testing.T) {
			if err := db.StopChain(ctx, "ETH", "a reorg deeper than 128 blocks (--max-reorg-depth) under block 40: refused, nothing deleted"); err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, "stopped", func() bool {
				h := health()
				return h.Status == "degraded" && strings.Contains(h.Fetch["ETH"], "fetching ETH stopped since") && strings.Contains(h.Fetch["ETH"], "deeper than 128 blocks")
			})
			if err := db.ResumeChain(ctx, "ETH"); err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, "resumed", func() bool { return health().Status == "ok" })
		})
	})
}
