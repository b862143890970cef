package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
)

// withApp names the PostgreSQL sessions of dsn's user (application_name),
// so that the audit tells the replicas' writes apart.
func withApp(t *testing.T, dsn, name string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// audit records every row written to the service's tables, committed,
// with the application_name of the session that wrote it.
const audit = `
CREATE TABLE test_audit (app TEXT NOT NULL, tbl TEXT NOT NULL, at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp());
CREATE FUNCTION test_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO test_audit (app, tbl) VALUES (current_setting('application_name'), TG_TABLE_NAME);
	RETURN NULL;
END $$;
DO $$
DECLARE t record;
BEGIN
	FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'public'
		AND tablename NOT IN ('test_audit', 'addrd_migrations', 'api_keys', 'accounts', 'subscriptions')
	LOOP
		EXECUTE format('CREATE TRIGGER test_audit AFTER INSERT OR UPDATE OR DELETE ON %I FOR EACH ROW EXECUTE FUNCTION test_audit()', t.tablename);
	END LOOP;
END $$;
`

// TestLeaseTakeover: two replicas on one PostgreSQL and a real geth node.
// The leader is frozen (SIGSTOP): the other takes over within the lease
// TTL and fetches on; the frozen one, continued, writes nothing; every
// transaction is stored once.
func TestLeaseTakeover(t *testing.T) {
	geth := testenv.NewGeth(t)
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	const ttl = 3 * time.Second

	if _, _, err := run(t, "migrate", "--db", dsn); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "apikey", "create", "--name", "alice", "--db", dsn)
	if err != nil {
		t.Fatal(err)
	}
	key := lastLine(out)
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(audit); err != nil {
		t.Fatalf("audit triggers: %v", err)
	}

	args := func(app string) []string {
		return []string{"--db", withApp(t, dsn, app), "--chain", "ETH=" + geth.URL, "--confirmations", "0",
			"--lease-ttl", ttl.String(), "--log-format", "json"}
	}
	// A block of now first: geth --dev's genesis is dated 1970, and a
	// leader whose newest block is that old reports the node lagging.
	geth.Transact(t, geth.Account, big.NewInt(1), nil, 21000)
	a := startProc(t, args("replica_a")...)
	eventually(t, 30*time.Second, "a leads", func() bool { return a.health(t).Chains["ETH"].ThisReplica })
	b := startProc(t, args("replica_b")...)
	if h := b.health(t); h.Status != "ok" || h.Chains["ETH"].Leader != a.holder || h.Chains["ETH"].ThisReplica {
		t.Fatalf("b's /healthz = %+v, want a (%s) leading", h, a.holder)
	}

	var raw [20]byte
	rand.Read(raw[:])
	addr := "0x" + hex.EncodeToString(raw[:])
	if status, body := b.do(t, key, "PUT", "/v1/chains/ETH/addresses/"+addr); status != 200 {
		t.Fatalf("PUT: %d %s", status, body)
	}
	var sent []string
	send := func() {
		t.Helper()
		receipt, err := geth.Send(ctx, map[string]any{"from": geth.Account, "to": addr, "value": "0x1"})
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, receipt["transactionHash"].(string))
	}
	// stored waits until the API lists exactly the transactions sent,
	// each once: nothing lost, nothing duplicated.
	stored := func(p *proc) {
		t.Helper()
		want := slices.Sorted(slices.Values(sent))
		var got []string
		eventually(t, 60*time.Second, fmt.Sprintf("%d transactions stored", len(want)), func() bool {
			status, body := p.do(t, key, "GET", "/v1/chains/ETH/addresses/"+addr+"/transactions?page_size=1000")
			var page struct {
				Transactions []struct {
					Hash string `json:"hash"`
				} `json:"transactions"`
			}
			if status != 200 || json.Unmarshal(body, &page) != nil {
				return false
			}
			got = got[:0]
			for _, tx := range page.Transactions {
				got = append(got, tx.Hash)
			}
			slices.Sort(got)
			return slices.Equal(got, want)
		})
	}
	// Wait for the first sync of the subscription, then transactions.
	eventually(t, 60*time.Second, "the subscription synced", func() bool {
		_, body := b.do(t, key, "GET", "/v1/chains/ETH/addresses/"+addr+"/balances")
		return strings.Contains(string(body), `"asset":"native"`)
	})
	send()
	send()
	stored(b)

	a.signal(t, syscall.SIGSTOP)
	send()
	took := eventually(t, 4*ttl, "b takes over", func() bool { return b.health(t).Chains["ETH"].ThisReplica })
	t.Logf("b took over %s after a was frozen (lease TTL %s)", took.Round(10*time.Millisecond), ttl)
	if took > ttl+ttl/5+2*time.Second {
		t.Errorf("takeover %s after the freeze, want within the TTL %s and a follower's retry", took, ttl)
	}
	send()
	stored(b)
	if h := b.health(t); h.Status != "ok" || h.Chains["ETH"].Leader != b.holder || h.Chains["ETH"].LeaseGeneration < 2 {
		t.Fatalf("b's /healthz after the takeover = %+v", h)
	}

	var resumed time.Time
	if err := db.QueryRow("SELECT clock_timestamp()").Scan(&resumed); err != nil {
		t.Fatal(err)
	}
	a.signal(t, syscall.SIGCONT)
	eventually(t, 30*time.Second, "a finds its lease lost", func() bool {
		return strings.Contains(a.stderr.String(), "lost the lease")
	})
	if h := a.health(t); h.Chains["ETH"].Leader != b.holder || h.Chains["ETH"].ThisReplica {
		t.Fatalf("a's /healthz after it resumed = %+v, want b leading", h)
	}
	send()
	send()
	stored(b)
	stored(a)

	var before, after int
	if err := db.QueryRow("SELECT count(*) FROM test_audit WHERE app = 'replica_a' AND at < $1", resumed).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if before == 0 {
		t.Fatal("the audit saw no write of a while it led: the audit does not work")
	}
	rows, err := db.Query("SELECT tbl, count(*) FROM test_audit WHERE app = 'replica_a' AND at >= $1 GROUP BY tbl", resumed)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var tbl string
		if err := rows.Scan(&tbl, &after); err != nil {
			t.Fatal(err)
		}
		t.Errorf("a wrote %d rows of %s after it resumed without its lease", after, tbl)
	}
}
