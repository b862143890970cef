package fetch_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain/chaintest"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
)

// The fetcher on a Reader alone (the fake family's): a chain whose node
// tells no balances, or tells them at its head only, as a UTXO node's sum
// of unspent outputs.

const fakeChain = "FAKE"

// fakeEnv is a fetcher of a Fake over a real store, with an API key.
type fakeEnv struct {
	t       *testing.T
	fake    *chaintest.Fake
	db      *store.DB
	account int64
	f       *fetch.Fetcher
}

func newFakeEnv(t *testing.T, dsn string, fc chaintest.FakeConfig, cfg fetch.Config) *fakeEnv {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	key, _, err := db.CreateAPIKey(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if fc.Start.IsZero() {
		fc.Start = time.Now() // fresh blocks: the lag check passes
	}
	e := &fakeEnv{t: t, fake: chaintest.NewFake(fc), db: db, account: key.AccountID}
	cfg.Chain, cfg.Store, cfg.Reader = fakeChain, db, e.fake.Reader()
	cfg.Native = query.NativeCoin{Symbol: "FAKE", Decimals: 8}
	if e.f, err = fetch.New(cfg); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *fakeEnv) fetch() {
	e.t.Helper()
	if err := e.f.FetchOnce(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

func (e *fakeEnv) subscribe(addresses ...string) {
	e.t.Helper()
	for _, a := range addresses {
		if _, err := e.db.Subscribe(context.Background(), e.account, fakeChain, a); err != nil {
			e.t.Fatal(err)
		}
	}
}

// fakeRow is what a test asserts of a statement row.
type fakeRow struct {
	block                     uint64
	amount, after, difference int64
	checked, reconciled       bool
	causes                    int
}

func (r fakeRow) String() string {
	return fmt.Sprintf("block %d %+d → %d (difference %d, %d causes, checked %v, reconciled %v)",
		r.block, r.amount, r.after, r.difference, r.causes, r.checked, r.reconciled)
}

// rows returns address's statement, oldest first, failing on a row that
// says it is not traced: a family without internal movements lists every
// movement.
func (e *fakeEnv) rows(address string) []fakeRow {
	e.t.Helper()
	changes := e.changes(address)
	for _, c := range changes {
		if !c.Internals {
			e.t.Errorf("%s block %d: Internals false (the API's traced), on a family without internal movements", address, c.Block)
		}
	}
	return fakeRows(changes, func(query.BalanceChange) bool { return true })
}

// changes returns address's statement rows as the store reads them.
func (e *fakeEnv) changes(address string) []query.BalanceChange {
	e.t.Helper()
	changes, err := e.db.AccountBalanceChanges(context.Background(), e.account, fakeChain, address, nil, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	return changes
}

// fakeRows returns the rows of changes that keep holds, oldest first.
func fakeRows(changes []query.BalanceChange, keep func(query.BalanceChange) bool) []fakeRow {
	var out []fakeRow
	for _, c := range changes {
		if !keep(c) {
			continue
		}
		out = append(out, fakeRow{block: c.Block, amount: c.Amount.Big().Int64(), after: c.BalanceAfter.Big().Int64(), difference: c.Difference.Big().Int64(),
			checked: c.Checked, reconciled: c.Reconciled, causes: len(c.Causes)})
	}
	slices.SortFunc(out, func(a, b fakeRow) int { return int(a.block) - int(b.block) })
	return out
}

func (e *fakeEnv) wantRows(address string, want ...fakeRow) {
	e.t.Helper()
	got := e.rows(address)
	if !slices.Equal(got, want) {
		e.t.Fatalf("%s's statement:\n%s\nwant\n%s", address, rowsText(got), rowsText(want))
	}
}

func rowsText(rs []fakeRow) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintln(&b, " ", r)
	}
	return b.String()
}

func pay(from, to string, amount, fee int64) chaintest.Payment {
	return chaintest.Payment{From: from, To: to, Amount: query.AmountOf(amount), Fee: query.AmountOf(fee)}
}

// TestFetchWithoutBalances fetches a chain whose Reader tells no
// balances (no chain.BalanceReader, no EVM Source): the fetcher
// subscribes, follows new blocks and a reorg, stores the transactions
// and the statement rows (the sums of the movements the family lists,
// never checked) and writes the events, retracting the rows of the
// replaced block.
func TestFetchWithoutBalances(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		e := newFakeEnv(t, dsn, chaintest.FakeConfig{}, fetch.Config{})
		e.fake.Pay(pay("alice", "frank", 400, 1))
		e.fake.Mine(3)
		e.subscribe("bob", "carol", "frank")
		e.fetch() // the first checkpoint, at the head; the subscriptions synced and backfilled
		if err := e.f.Health(); err != nil {
			t.Fatal(err)
		}
		if got := e.f.InternalsSource(); got != fetch.NoInternals {
			t.Errorf("Traces() = %q on a family without internal movements, want %q", got, fetch.NoInternals)
		}

		e.fake.Pay(pay("alice", "bob", 1000, 10))
		e.fake.Mine(1) // 4
		e.fake.Pay(pay("bob", "carol", 300, 5))
		e.fake.Mine(1) // 5
		e.fetch()
		e.wantRows("bob", fakeRow{block: 4, amount: 1000, after: 1000, causes: 1}, fakeRow{block: 5, amount: -305, after: 695, causes: 2})
		e.wantRows("carol", fakeRow{block: 5, amount: 300, after: 300, causes: 1})
		if n := e.replayHoldings("bob", "carol"); n != 0 {
			t.Fatalf("%d retractions before any reorg", n)
		}
		old := txHashes(t, e.db, "carol")

		// Block 5 replaced by two: its payment is mined again, in the new
		// block 5, under another hash.
		e.fake.Reorg(1)
		e.fetch() // the rewind
		e.fetch() // the new blocks
		if cp, _, err := e.db.Checkpoint(ctx, fakeChain); err != nil || cp.Number != 6 {
			t.Fatalf("checkpoint %d, %v after the reorg; want 6", cp.Number, err)
		}
		e.wantRows("bob", fakeRow{block: 4, amount: 1000, after: 1000, causes: 1}, fakeRow{block: 5, amount: -305, after: 695, causes: 2})
		e.wantRows("carol", fakeRow{block: 5, amount: 300, after: 300, causes: 1})
		now := txHashes(t, e.db, "carol")
		if len(now) != 1 || len(old) != 1 || now[0] == old[0] {
			t.Fatalf("carol's transactions %v before the reorg, %v after: want one, replaced", old, now)
		}
		if n := e.replayHoldings("bob", "carol"); n != 2 {
			t.Fatalf("%d retractions after a reorg of the block with bob's and carol's rows; want 2", n)
		}

		// frank's payment of block 1, before he subscribed, is backfilled:
		// listed, but no statement row chains from a balance nobody
		// tells; his statement starts at zero where the head follower
		// sees him move.
		if got := txHashes(t, e.db, "frank"); len(got) != 1 {
			t.Fatalf("frank's transactions %v: want his backfilled payment", got)
		}
		e.fake.Pay(pay("frank", "carol", 100, 2))
		e.fake.Mine(1) // 7
		e.fetch()
		e.wantRows("frank", fakeRow{block: 7, amount: -102, after: -102, causes: 2})
	})
}

// TestFetchTipBalances fetches a chain whose Reader tells balances at the
// node's head only (chain.ErrNotImplemented elsewhere), as a UTXO node's
// sum of unspent outputs: a chunk of blocks that ends at the head is
// checked there, and reconciles; a change the family does not list
// (Unseen) shows at the next check as a difference on the row of the
// head's block, kept and shown; with confirmations nothing is ever read
// at the head, and nothing is checked.
func TestFetchTipBalances(t *testing.T) {
	t.Run("confirmations=0", func(t *testing.T) {
		testenv.ForEachDB(t, func(t *testing.T, dsn string) {
			e := newFakeEnv(t, dsn, chaintest.FakeConfig{TipBalances: true}, fetch.Config{})
			e.fake.Mine(3)
			e.subscribe("bob")
			e.fetch()
			e.fake.Pay(pay("alice", "bob", 1000, 10))
			e.fake.Mine(1) // 4
			e.fetch()
			e.wantRows("bob", fakeRow{block: 4, amount: 1000, after: 1000, causes: 1, checked: true, reconciled: true})

			// Two blocks in one chunk: read at its last, the head, where bob
			// did not move: his row at 5 is not checked, and nothing differs.
			e.fake.Pay(pay("bob", "carol", 300, 5))
			e.fake.Mine(2) // 5, 6
			e.fetch()
			e.wantRows("bob", fakeRow{block: 4, amount: 1000, after: 1000, causes: 1, checked: true, reconciled: true},
				fakeRow{block: 5, amount: -305, after: 695, causes: 2})

			// 7 units the family does not list: the node's sum says 752 at
			// the head, the movements 745. The difference cannot be located
			// below the head (no balances there): it is on the row of block
			// 7, which says so.
			e.fake.Unseen("bob", "", query.AmountOf(7))
			e.fake.Pay(pay("alice", "bob", 50, 1))
			e.fake.Mine(1) // 7
			e.fetch()
			e.wantRows("bob", fakeRow{block: 4, amount: 1000, after: 1000, causes: 1, checked: true, reconciled: true},
				fakeRow{block: 5, amount: -305, after: 695, causes: 2},
				fakeRow{block: 7, amount: 57, after: 752, difference: 7, causes: 1, checked: true})
			if n := e.replayHoldings("bob"); n != 0 {
				t.Fatalf("%d retractions without a reorg", n)
			}
		})
	})
	t.Run("confirmations=1", func(t *testing.T) {
		testenv.ForEachDB(t, func(t *testing.T, dsn string) {
			e := newFakeEnv(t, dsn, chaintest.FakeConfig{TipBalances: true, Reference: "2"}, fetch.Config{Confirmations: 1})
			e.fake.Mine(3)
			e.subscribe("dave")
			e.fetch()
			e.fake.Pay(pay("alice", "dave", 1000, 10))
			e.fake.Mine(2) // 4, and 5 on it
			e.fetch()
			e.wantRows("dave", fakeRow{block: 4, amount: 1000, after: 1000, causes: 1})

			// erin holds 500 from block 6 and gets 200 more in block 7, the
			// tip, when she subscribes: her statement starts at block 6
			// (the stored head) at the node's 700 at the tip less the 200
			// of block 7, chains on from there, and her backfill's row of
			// block 6 chains down from it to nothing before.
			e.fake.Pay(pay("alice", "erin", 500, 1))
			e.fake.Mine(1) // 6
			e.fake.Pay(pay("alice", "erin", 200, 1))
			e.fake.Mine(1) // 7
			e.fetch()      // stores 5 and 6
			e.subscribe("erin")
			e.fetch() // syncs erin at 6
			e.fake.Pay(pay("alice", "erin", 100, 1))
			e.fake.Mine(2) // 8, and 9 on it
			e.fetch()
			e.wantRows("erin", fakeRow{block: 6, amount: 500, after: 500, causes: 1},
				fakeRow{block: 7, amount: 200, after: 700, causes: 1}, fakeRow{block: 8, amount: 100, after: 800, causes: 1})
		})
	})
}

// txHashes returns the hashes of address's stored transactions.
func txHashes(t *testing.T, db *store.DB, address string) []string {
	t.Helper()
	txs, err := db.Transactions(context.Background(), fakeChain, address, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tx := range txs {
		out = append(out, tx.Hash)
	}
	return out
}
