package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/store"
)

func genAddr(k int) string { return fmt.Sprintf("0x%040x", 0xa11ce000+k) }

var hostile = []string{"", "USDC", "\x00NUL\x00", "bad \xff\xfe utf-8", "ctl\x01\x1b[31m\x7f", "\u202egnp.exe", strings.Repeat("Z", 300), "=HYPERLINK(\"x\")", "日本語トークン"}

// genSeed fills db with the upgrade fixture's data, from seed 36.
func genSeed(t *testing.T, db *store.DB) (id, secret string) {
	ctx := context.Background()
	k, secret, err := db.CreateAPIKey(ctx, "fixture")
	if err != nil {
		t.Fatal(err)
	}
	acct, err := db.Authenticate(ctx, k.ID, secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.RecordChainIdentity(ctx, "ETH", query.ChainIdentity{ID: 1, Genesis: "0xd4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RecordChainIdentity(ctx, "TST", query.ChainIdentity{ID: 1337}); err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for i := range 6 {
		addrs = append(addrs, genAddr(i))
		if _, err := db.Subscribe(ctx, acct.ID, "ETH", genAddr(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.MarkSynced(ctx, "ETH", addrs, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := db.StoreBackfill(ctx, "ETH", query.BackfillJob{Addresses: addrs}, nil, nil, -1); err != nil {
		t.Fatal(err)
	}
	if err := db.BalancesStored(ctx, "ETH", addrs, 0); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(36, 36))
	tokens := make([]string, 5)
	for i := range tokens {
		tokens[i] = fmt.Sprintf("0x%040x", 0xc0de000+i)
	}
	pick := func() string { return hostile[r.IntN(len(hostile))] }
	symbols, names := map[string]string{}, map[string]string{}
	for _, c := range tokens {
		symbols[c], names[c] = pick(), pick()
	}
	balance := map[[2]string]int64{}
	var blocks []query.BlockData
	for n := uint64(1); n <= 60; n++ {
		b := query.BlockData{Block: query.Block{Number: n, Hash: fmt.Sprintf("0x%064x", 0xb000+n), ParentHash: fmt.Sprintf("0x%064x", 0xb000+n-1),
			Time: time.Unix(int64(1_700_000_000+n*12), 0).UTC()}}
		perAddr := map[[2]string]*query.BalanceChange{}
		for i := range uint(r.IntN(4)) {
			from, to := addrs[r.IntN(len(addrs))], addrs[r.IntN(len(addrs))]
			if r.IntN(3) == 0 {
				to = fmt.Sprintf("0x%040x", 0xee0000+r.IntN(100))
			}
			hash := fmt.Sprintf("0x%056x%08x", 0x7000+n, i)
			value := int64(r.IntN(1_000_000))
			tx := query.Transaction{Chain: "ETH", Hash: hash, BlockNumber: n, BlockHash: b.Hash, BlockTime: b.Time, Index: i,
				Status: query.StatusSuccess, From: from, To: to, Value: query.AmountOf(value), Fee: query.AmountOf(21000 * int64(1+i)),
				Nonce: uint64(r.IntN(1000)), Type: uint8(r.IntN(4)), GasLimit: 60000, GasUsed: 21000 + uint64(r.IntN(9000)),
				EffectiveGasPrice: query.AmountOf(int64(1 + i)), Method: "0xa9059cbb", Input: "0xa9059cbb" + strings.Repeat("00", r.IntN(8)),
				CumulativeGasUsed: uint64(21000 * (i + 1))}
			if r.IntN(6) == 0 {
				tx.Status, tx.RevertReason = query.StatusFailed, pick()
			}
			if r.IntN(10) == 0 {
				tx.To, tx.Created = "", fmt.Sprintf("0x%040x", 0xcc0000+n)
			}
			tx.Transfers = append(tx.Transfers, query.Transfer{LogIndex: -1, Asset: query.AssetNative, From: from, To: to,
				Amount: tx.Value, Kind: query.KindTransaction, Symbol: "ETH", Decimals: 18})
			if r.IntN(2) == 0 {
				tx.Transfers = append(tx.Transfers, query.Transfer{LogIndex: -2, Asset: query.AssetNative, From: to, To: from,
					Amount: query.AmountOf(7), Kind: query.KindInternal, Symbol: "ETH", Decimals: 18, CallType: "CALL", CallPath: "0.1", Error: []string{"", "execution reverted"}[r.IntN(2)]})
			}
			for j := range r.IntN(3) {
				c := tokens[r.IntN(len(tokens))]
				f := query.Transfer{LogIndex: int(i)*10 + j, Asset: query.AssetERC20, Contract: c, From: from, To: to,
					Amount: query.AmountOf(int64(r.IntN(1e6))), Kind: query.KindToken, Symbol: symbols[c], Name: names[c], Decimals: r.IntN(30)}
				switch r.IntN(4) {
				case 0:
					f.Asset, f.TokenID, f.Amount = query.AssetERC721, fmt.Sprint(r.IntN(1e9)), query.AmountOf(1)
				case 1:
					f.Asset, f.TokenID = query.AssetERC1155, fmt.Sprint(r.IntN(5))
				}
				tx.Transfers = append(tx.Transfers, f)
			}
			b.Txs = append(b.Txs, tx)
			if tx.Status != query.StatusSuccess {
				continue
			}
			for _, side := range []struct {
				a    string
				sign int64
			}{{from, -1}, {to, 1}} {
				key := [2]string{side.a, ""}
				if !strings.HasPrefix(side.a, "0x00000000000000000000000000000000a11ce") {
					continue
				}
				ch := perAddr[key]
				if ch == nil {
					ch = &query.BalanceChange{Chain: "ETH", Address: side.a, Block: n, Time: b.Time, Checked: r.IntN(2) == 0, Traced: true}
					ch.Reconciled = ch.Checked
					perAddr[key] = ch
				}
				ch.Causes = append(ch.Causes, query.Cause{Kind: query.KindTransaction, TxHash: hash, Amount: query.AmountOf(side.sign * value)})
				ch.Amount = query.AmountOf(ch.Amount.Big().Int64() + side.sign*value)
			}
		}
		if n%7 == 0 {
			a := addrs[r.IntN(len(addrs))]
			key := [2]string{a, ""}
			ch := perAddr[key]
			if ch == nil {
				ch = &query.BalanceChange{Chain: "ETH", Address: a, Block: n, Time: b.Time, Traced: true}
				perAddr[key] = ch
			}
			amt := int64(r.IntN(1e6))
			ch.Causes = append(ch.Causes, query.Cause{Kind: query.KindWithdrawal, Amount: query.AmountOf(amt), Withdrawal: &query.WithdrawalRef{Index: n * 16, Validator: 4242}})
			ch.Amount = query.AmountOf(ch.Amount.Big().Int64() + amt)
		}
		for _, a := range addrs {
			ch := perAddr[[2]string{a, ""}]
			if ch == nil {
				continue
			}
			balance[[2]string{a, ""}] += ch.Amount.Big().Int64()
			if balance[[2]string{a, ""}] < 0 {
				// keep balances non-negative: a difference from the node
				d := -balance[[2]string{a, ""}] + 1_000_000
				ch.Difference = query.AmountOf(d)
				ch.Amount = query.AmountOf(ch.Amount.Big().Int64() + d)
				balance[[2]string{a, ""}] += d
				ch.Checked, ch.Reconciled = true, false
			}
			ch.BalanceAfter = query.AmountOf(balance[[2]string{a, ""}])
			b.Changes = append(b.Changes, *ch)
			b.Heads = append(b.Heads, query.StatementHead{Address: a, Block: n, Balance: ch.BalanceAfter})
		}
		blocks = append(blocks, b)
	}
	if err := db.StoreBlocks(ctx, "ETH", blocks); err != nil {
		t.Fatal(err)
	}
	var bals []query.Balance
	for _, a := range addrs {
		bals = append(bals, query.Balance{Chain: "ETH", Address: a, Asset: query.AssetNative, Symbol: "ETH", Decimals: 18,
			Amount: query.AmountOf(balance[[2]string{a, ""}]), Block: 60, Updated: time.Unix(1_700_000_720, 0).UTC()})
		for _, c := range tokens[:2] {
			bals = append(bals, query.Balance{Chain: "ETH", Address: a, Asset: query.AssetERC20, Contract: c, Symbol: symbols[c], Name: names[c], Decimals: 6,
				Amount: query.AmountOf(int64(r.IntN(1e9))), Block: 60, Updated: time.Unix(1_700_000_720, 0).UTC()})
		}
	}
	if err := db.PutBalances(ctx, bals); err != nil {
		t.Fatal(err)
	}
	return k.ID, secret
}

// genReads reads the fixture's data through the API as a requester
// would, every page, and returns the answers by path.
func genReads(t *testing.T, db *store.DB, id, secret string) map[string]string {
	h := api.New(api.Config{Store: db, Chains: []string{"ETH", "TST"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: prometheus.NewRegistry()})
	srv := httptest.NewServer(h)
	defer srv.Close()
	out := map[string]string{}
	get := func(path string) map[string]any {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.SetBasicAuth(id, secret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		out[path] = fmt.Sprintf("%d %s", res.StatusCode, body)
		var m map[string]any
		json.Unmarshal(body, &m)
		return m
	}
	hashes := map[string]bool{}
	for i := range 6 {
		base := "/v1/chains/ETH/addresses/" + genAddr(i)
		get(base)
		get(base + "/balances")
		get(base + "/balances?block_number=30")
		for _, list := range []string{"/transactions?page_size=7", "/balance_changes?page_size=5", "/transactions?page_size=4&counterparty=" + genAddr(1)} {
			path := base + list
			for {
				m := get(path)
				if !strings.HasPrefix(out[path], "200") {
					t.Fatalf("%s: %s", path, out[path])
				}
				txl, _ := m["transactions"].([]any)
				for _, x := range txl {
					if x, ok := x.(map[string]any); ok {
						hashes[x["hash"].(string)] = true
					}
				}
				next, _ := m["next_page_token"].(string)
				if next == "" {
					break
				}
				path = base + list + "&page_token=" + next
			}
		}
		get(base + "/balance_changes:export")
	}
	for h := range hashes {
		get("/v1/chains/ETH/transactions/" + h)
	}
	get("/v1/addresses")
	return out
}

// TestMakeUpgradeFixture makes testdata/upgrade with the code of this
// commit. It ran once; the code that reads the fixture now is another.
func TestMakeUpgradeFixture(t *testing.T) {
	dir := os.Getenv("ADDRD_MAKE_UPGRADE_FIXTURE")
	if dir == "" {
		t.Skip("ADDRD_MAKE_UPGRADE_FIXTURE=dir makes the fixture")
	}
	ctx := context.Background()
	write := func(name string, reads map[string]string) {
		b, err := json.MarshalIndent(reads, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// SQLite: the file itself.
	file := filepath.Join(dir, "release.sqlite")
	os.Remove(file)
	db, err := store.Open(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	id, secret := genSeed(t, db)
	genReads(t, db, id, secret) // the page-token secret, created on first use
	if _, err := db.Bun().ExecContext(ctx, "VACUUM"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	tmp := filepath.Join(t.TempDir(), "copy.sqlite")
	b, _ := os.ReadFile(file)
	os.WriteFile(tmp, b, 0o644)
	db, err = store.Open(ctx, tmp)
	if err != nil {
		t.Fatal(err)
	}
	reads := genReads(t, db, id, secret)
	reads["key"] = id + ":" + secret
	write("reads.sqlite.json", reads)
	db.Close()
	// PostgreSQL: a dump of the schema and rows.
	dsn := testenv.Postgres(t)
	db, err = store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	id, secret = genSeed(t, db)
	genReads(t, db, id, secret)
	db.Close()
	pgdump, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_dump")
	dump, err := exec.Command(pgdump[len(pgdump)-1], "--no-owner", "--no-privileges", "--inserts", "-d", dsn).Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "release.postgresql.sql"), dump, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err = store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	reads = genReads(t, db, id, secret)
	reads["key"] = id + ":" + secret
	write("reads.postgresql.json", reads)
	db.Close()
}
