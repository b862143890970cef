package store_test

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/store/benchdata"
)

// booksData is a generated history of one address: its statement rows,
// its transactions and its balances, with times that do not decrease with
// the block (two blocks may share a second).
type booksData struct {
	addr     string
	parties  []string
	tokens   []string
	changes  []query.BalanceChange
	txs      []query.Transaction
	balances []query.Balance
}

var allKinds = []string{query.KindTransaction, query.KindInternal, query.KindToken, query.KindFee, query.KindWithdrawal,
	query.KindFeeIncome, query.KindCreation, query.KindSelfdestruct, query.KindBurn, query.KindGenesis}

const booksBase = 1_700_000_000

func blockTime(b uint64) time.Time { return time.Unix(booksBase+int64(b/2)*12, 0).UTC() }

func genBooks(rng *rand.Rand) booksData {
	d := booksData{addr: "0x" + fmt.Sprintf("%040x", 0xa11ce)}
	for i := range 4 {
		d.parties = append(d.parties, fmt.Sprintf("0x%040x", 0xbb0+i))
	}
	// Two tokens that move in about a third of the blocks, and one that
	// seldom moves (a statement range of one asset reads the two kinds
	// of asset in two ways on SQLite).
	d.tokens = []string{fmt.Sprintf("0x%040x", 0xc01), fmt.Sprintf("0x%040x", 0xc02), fmt.Sprintf("0x%040x", 0xc03)}
	running := map[string]*big.Int{"": big.NewInt(1e6), d.tokens[0]: big.NewInt(1e6), d.tokens[1]: big.NewInt(1e6), d.tokens[2]: big.NewInt(1e6)}
	for b := range uint64(60 + rng.IntN(60)) {
		if rng.IntN(3) == 0 {
			continue
		}
		party := d.parties[rng.IntN(len(d.parties))]
		t := query.Transaction{Chain: "ETH", Hash: fmt.Sprintf("0x%064x", 0x1000+b), BlockNumber: b, BlockHash: fmt.Sprintf("0xb%d", b),
			BlockTime: blockTime(b), Status: query.StatusSuccess, From: d.addr, To: party, Value: query.AmountOf(0), Fee: query.AmountOf(0)}
		if rng.IntN(2) == 0 {
			t.From, t.To = party, d.addr
		}
		for _, contract := range []string{"", d.tokens[0], d.tokens[1], d.tokens[2]} {
			if rng.IntN(2) == 0 || contract == d.tokens[2] && rng.IntN(8) != 0 {
				continue
			}
			c := query.BalanceChange{Chain: "ETH", Address: d.addr, Contract: contract, Block: b, Time: blockTime(b),
				Checked: rng.IntN(2) == 0, Reconciled: true, Internals: true}
			sum := new(big.Int)
			for range 1 + rng.IntN(2) {
				kind := allKinds[rng.IntN(len(allKinds))]
				amount := big.NewInt(int64(rng.IntN(2000) - 1000))
				cs := query.Cause{Kind: kind, Amount: query.AmountFromBig(amount)}
				if kind != query.KindWithdrawal && kind != query.KindFeeIncome && rng.IntN(4) != 0 {
					cs.TxHash = t.Hash
					asset, kindT := query.AssetNative, kind
					if contract != "" {
						asset = query.AssetERC20
					}
					t.Transfers = append(t.Transfers, query.Transfer{Position: len(t.Transfers), Kind: kindT, Asset: asset,
						Contract: contract, From: t.From, To: t.To, Amount: query.AmountOf(1)})
				}
				sum.Add(sum, amount)
				c.Causes = append(c.Causes, cs)
			}
			running[contract].Add(running[contract], sum)
			c.Amount, c.BalanceAfter = query.AmountFromBig(sum), query.AmountFromBig(running[contract])
			d.changes = append(d.changes, c)
		}
		d.txs = append(d.txs, t)
	}
	d.balances = []query.Balance{
		{Chain: "ETH", Address: d.addr, Asset: query.AssetNative, Symbol: "ETH", Decimals: 18, Amount: query.AmountFromBig(running[""]), Block: 200},
		{Chain: "ETH", Address: d.addr, Asset: query.AssetERC20, Contract: d.tokens[0], Symbol: "ONE", Decimals: 6, Amount: query.AmountFromBig(running[d.tokens[0]]), Block: 200},
		{Chain: "ETH", Address: d.addr, Asset: query.AssetERC20, Contract: d.tokens[1], Symbol: "TWO words", Decimals: 0, Amount: query.AmountFromBig(running[d.tokens[1]]), Block: 200},
		{Chain: "ETH", Address: d.addr, Asset: query.AssetERC20, Contract: d.tokens[2], Symbol: "RARE", Decimals: 2, Amount: query.AmountFromBig(running[d.tokens[2]]), Block: 200},
	}
	return d
}

// genRange draws a range over d: bounds, order and filters, each present
// or not.
func genRange(rng *rand.Rand, d booksData) query.Range {
	var r query.Range
	if rng.IntN(2) == 0 {
		r.FromBlock = uint64(rng.IntN(80))
	}
	if rng.IntN(2) == 0 {
		r.ToBlock, r.HasToBlock = r.FromBlock+uint64(rng.IntN(80)), true
	}
	if rng.IntN(3) == 0 {
		r.FromTime = blockTime(uint64(rng.IntN(120))).Add(time.Duration(rng.IntN(3)-1) * 500 * time.Millisecond)
	}
	if rng.IntN(3) == 0 {
		r.ToTime = blockTime(uint64(rng.IntN(120))).Add(time.Duration(rng.IntN(3)-1) * 500 * time.Millisecond)
	}
	r.Ascending = rng.IntN(2) == 0
	switch rng.IntN(4) {
	case 0:
		r.Contract, r.HasContract = "", true
	case 1:
		r.Contract, r.HasContract = d.tokens[rng.IntN(len(d.tokens))], true
	case 2:
		r.TokensOnly = rng.IntN(2) == 0
	}
	for range rng.IntN(3) {
		if k := allKinds[rng.IntN(len(allKinds))]; !slices.Contains(r.Kinds, k) {
			r.Kinds = append(r.Kinds, k)
		}
	}
	if rng.IntN(3) == 0 {
		r.Counterparty = d.parties[rng.IntN(len(d.parties))]
	}
	return r
}

// inRange is the model of a range's block and time bounds.
func inRange(r query.Range, block uint64, t time.Time) bool {
	return block >= r.FromBlock && (!r.HasToBlock || block <= r.ToBlock) &&
		(r.FromTime.IsZero() || !t.Before(r.FromTime)) && (r.ToTime.IsZero() || t.Before(r.ToTime))
}

// wantChanges is the model of a statement range.
func wantChanges(d booksData, r query.Range) []string {
	parties := map[string][]string{}
	for _, t := range d.txs {
		ps := []string{t.From, t.To}
		for _, f := range t.Transfers {
			ps = append(ps, f.From, f.To)
		}
		parties[t.Hash] = ps
	}
	var out []string
	for _, c := range d.changes {
		if !inRange(r, c.Block, c.Time) || r.HasContract && !holds(r.Contract, c.Contract) || r.TokensOnly && c.Contract == "" {
			continue
		}
		ok := false
		for _, cs := range c.Causes {
			if (len(r.Kinds) == 0 || slices.Contains(r.Kinds, cs.Kind)) &&
				(r.Counterparty == "" || cs.TxHash != "" && slices.Contains(parties[cs.TxHash], r.Counterparty)) {
				ok = true
			}
		}
		if ok {
			out = append(out, fmt.Sprintf("%d/%s", c.Block, c.Contract))
		}
	}
	// d.changes is in (block, contract) order: "" < "0x…".
	if !r.Ascending {
		slices.Reverse(out)
	}
	return out
}

// holds reports whether a filter contract= keeps a row of holding: the
// asset itself, or an id of the ERC-1155 contract it names.
func holds(contract, holding string) bool {
	c, id := query.SplitHoldingKey(holding)
	return holding == contract || id != "" && c == contract
}

// wantTxs is the model of a transactions range.
func wantTxs(d booksData, r query.Range) []string {
	var out []string
	for _, t := range d.txs {
		if !inRange(r, t.BlockNumber, t.BlockTime) {
			continue
		}
		if r.Counterparty != "" && t.From != r.Counterparty && t.To != r.Counterparty {
			continue // every transfer here is between From and To
		}
		kindOK := len(r.Kinds) == 0 || t.From == d.addr && slices.Contains(r.Kinds, query.KindFee)
		assetOK := !r.HasContract && !r.TokensOnly || r.HasContract && r.Contract == "" && t.From == d.addr
		for _, f := range t.Transfers {
			kindOK = kindOK || slices.Contains(r.Kinds, f.Kind)
			assetOK = assetOK || r.TokensOnly && f.Contract != "" || r.HasContract && f.Contract == r.Contract
		}
		if kindOK && assetOK {
			out = append(out, t.Hash)
		}
	}
	if !r.Ascending {
		slices.Reverse(out)
	}
	return out
}

// TestRanges: a statement and a transactions list read in pages with a
// random range, order and filters, and a random budget, are the model's
// rows, in the model's order, whatever the page size; every label is the
// balances'. Balances as of a random block or time are what the
// statement's rows say. The seed is printed on failure.
func TestRanges(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, _ *testenv.Clock) {
		ctx := context.Background()
		rng := testenv.Rand(t, 24)
		d := genBooks(rng)
		key := putBooks(t, db, d)
		for i := range 60 {
			r := genRange(rng, d)
			size, budget := 1+rng.IntN(9), 1+rng.IntN(40)
			got, gotFunc := readChanges(t, db, key, d, r, size, budget)
			if want := wantChanges(d, r); !slices.Equal(got, want) || !slices.Equal(gotFunc, want) {
				t.Fatalf("statement range %d %+v, pages of %d, budget %d:\n got %v\n row at a time %v\nwant %v", i, r, size, budget, got, gotFunc, want)
			}

			var gotTx []string
			var tafter *query.TxCursor
			for pages := 0; ; pages++ {
				if pages > 1000 {
					t.Fatalf("range %d %+v: more than 1000 pages", i, r)
				}
				_, page, err := db.SubscriptionTxRange(context.Background(), key.AccountID, "ETH", d.addr, r, tafter, size, budget)
				if err != nil {
					t.Fatalf("range %d %+v: %v", i, r, err)
				}
				for _, t := range page.Txs {
					gotTx = append(gotTx, t.Hash)
				}
				if page.Next == nil {
					break
				}
				tafter = page.Next
			}
			if want := wantTxs(d, r); !slices.Equal(gotTx, want) {
				t.Fatalf("transactions range %d %+v, pages of %d, budget %d:\n got %v\nwant %v", i, r, size, budget, gotTx, want)
			}
		}

		// Balances as of a block, and as of a time.
		for range 40 {
			n := uint64(rng.IntN(130))
			_, got, _, err := db.SubscriptionBalancesAt(ctx, key.AccountID, "ETH", d.addr, n, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			checkAsOf(t, d, n, got)
			at := blockTime(uint64(rng.IntN(130))).Add(time.Duration(rng.IntN(12)) * time.Second)
			_, got, _, err = db.SubscriptionBalancesAt(ctx, key.AccountID, "ETH", d.addr, 0, at)
			if at.Before(d.changes[0].Time) {
				if err != query.ErrBeforeStatement {
					t.Fatalf("balances at %s, before the first row: %v", at, err)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			var last uint64
			for _, c := range d.changes {
				if !c.Time.After(at) {
					last = c.Block
				}
			}
			checkAsOf(t, d, last, got)
		}
	})
}

// readChanges reads the statement of d's address in r page by page, at
// most size rows a page and budget rows read, through both reads
// (SubscriptionChangeRange, and SubscriptionChangeRangeFunc, which the
// API pages with), holding each page to size rows and each row's label to
// d's balances, and returns the rows each read listed, as block/contract.
func readChanges(t *testing.T, db *store.DB, key query.APIKey, d booksData, r query.Range, size, budget int) (pages, rowAtATime []string) {
	t.Helper()
	ctx := context.Background()
	row := func(c *query.BalanceChange, l query.Label) string {
		if want := labelOf(d, c.Contract); l != want {
			t.Fatalf("range %+v: row %d/%s: label %+v, want %+v", r, c.Block, c.Contract, l, want)
		}
		return fmt.Sprintf("%d/%s", c.Block, c.Contract)
	}
	// read reads one page after the cursor with one of the two reads,
	// and returns its rows and the next cursor.
	var lists [2][]string
	for k, read := range []func(after *query.ChangeCursor) ([]string, *query.ChangeCursor, error){
		func(after *query.ChangeCursor) ([]string, *query.ChangeCursor, error) {
			_, page, err := db.SubscriptionChangeRange(ctx, key.AccountID, "ETH", d.addr, r, after, size, budget)
			var rows []string
			for i := range page.Rows {
				rows = append(rows, row(&page.Rows[i], query.LabelOf(page.Labels, page.Rows[i].Contract)))
			}
			return rows, page.Next, err
		},
		func(after *query.ChangeCursor) ([]string, *query.ChangeCursor, error) {
			var rows []string
			_, next, err := db.SubscriptionChangeRangeFunc(ctx, key.AccountID, "ETH", d.addr, r, after, size, budget,
				func(c *query.BalanceChange, l query.Label) error {
					rows = append(rows, row(c, l))
					return nil
				})
			return rows, next, err
		},
	} {
		var (
			all   []string
			after *query.ChangeCursor
		)
		for pages := 0; ; pages++ {
			if pages > 1000 {
				t.Fatalf("range %+v: more than 1000 pages", r)
			}
			rows, next, err := read(after)
			if err != nil {
				t.Fatalf("range %+v: %v", r, err)
			}
			if len(rows) > size {
				t.Fatalf("range %+v: %d rows in a page of %d", r, len(rows), size)
			}
			all = append(all, rows...)
			if next == nil {
				break
			}
			after = next
		}
		lists[k] = all
	}
	return lists[0], lists[1]
}

// labelOf is the label d's balances give contract.
func labelOf(d booksData, contract string) query.Label {
	for _, b := range d.balances {
		if b.Contract == contract {
			return query.Label{Asset: b.Asset, Symbol: b.Symbol, Decimals: b.Decimals}
		}
	}
	return query.Label{}
}

// checkAsOf holds balances as of block n to the model: the balance after
// each asset's last row at or before n, else its first row's opening
// balance, else its balance.
func checkAsOf(t *testing.T, d booksData, n uint64, got []query.AsOf) {
	t.Helper()
	if len(got) != len(d.balances) {
		t.Fatalf("as of %d: %d balances, want %d", n, len(got), len(d.balances))
	}
	for i, b := range d.balances {
		want := b.Amount
		var first *query.BalanceChange
		for j := range d.changes {
			c := &d.changes[j]
			if c.Contract != b.Contract {
				continue
			}
			if c.Block <= n {
				want = c.BalanceAfter
			} else if first == nil {
				first = c
			}
		}
		if first != nil && (want == b.Amount && !hasRowAtOrBefore(d, b.Contract, n)) {
			want = first.BalanceAfter.Sub(first.Amount)
		}
		if g := got[i]; g.Contract != b.Contract || g.Amount != want || g.Block != n || g.Symbol != b.Symbol || g.Decimals != b.Decimals {
			t.Fatalf("as of %d, %q: %+v, want amount %s", n, b.Contract, g, want)
		}
	}
}

func hasRowAtOrBefore(d booksData, contract string, n uint64) bool {
	for _, c := range d.changes {
		if c.Contract == contract && c.Block <= n {
			return true
		}
	}
	return false
}

// TestFillBlockTimes: rows stored without a block time (before migration
// 0035, or by an older binary's fetcher during a rolling upgrade) get
// their block's time from their documents (and transactions), by the
// migration's fill and by the fill of a fetcher taking the lease, and a
// time range then finds them.
func TestFillBlockTimes(t *testing.T) {
	for _, fill := range []struct {
		name string
		run  func(context.Context, *store.DB) (int, error)
	}{
		{"migration", func(ctx context.Context, db *store.DB) (int, error) { return -1, db.FillMigrationBlockTimes(ctx) }},
		{"lease", func(ctx context.Context, db *store.DB) (int, error) { return db.FillBlockTimes(ctx, "ETH") }},
	} {
		t.Run(fill.name, func(t *testing.T) {
			each(t, func(t *testing.T, db *store.DB, _ *testenv.Clock) {
				ctx := context.Background()
				rng := rand.New(rand.NewPCG(1, 24))
				d := genBooks(rng)
				key := putBooks(t, db, d)
				r := query.Range{FromTime: blockTime(30), ToTime: blockTime(70), Ascending: true}
				read := func() ([]query.BalanceChange, []query.Transaction) {
					_, cs, err := db.SubscriptionChangeRange(ctx, key.AccountID, "ETH", d.addr, r, nil, 1000, 1000)
					if err != nil {
						t.Fatal(err)
					}
					_, ts, err := db.SubscriptionTxRange(ctx, key.AccountID, "ETH", d.addr, r, nil, 1000, 1000)
					if err != nil {
						t.Fatal(err)
					}
					return cs.Rows, ts.Txs
				}
				wantC, wantT := read()
				if len(wantC) == 0 || len(wantT) == 0 {
					t.Fatalf("the range holds %d rows and %d transactions", len(wantC), len(wantT))
				}
				if err := db.ForgetBlockTimes(ctx); err != nil {
					t.Fatal(err)
				}
				if c, tx := read(); len(c) != 0 || len(tx) != 0 {
					t.Fatalf("without block times, a time range holds %d rows and %d transactions", len(c), len(tx))
				}
				n, err := fill.run(ctx, db)
				if err != nil {
					t.Fatal(err)
				}
				if rows := len(d.changes) + countTxRows(d); n >= 0 && n != rows {
					t.Errorf("the fill wrote %d rows, want %d (every statement and transaction row)", n, rows)
				}
				gotC, gotT := read()
				if len(gotC) != len(wantC) || len(gotT) != len(wantT) {
					t.Fatalf("after the fill: %d rows and %d transactions, want %d and %d", len(gotC), len(gotT), len(wantC), len(wantT))
				}
				if n, err := fill.run(ctx, db); err != nil || n > 0 {
					t.Errorf("a second fill wrote %d rows (%v), want none", n, err)
				}
			})
		})
	}
}

// countTxRows is the number of tx_addresses rows d's transactions have:
// one for each distinct address a transaction touches.
func countTxRows(d booksData) int {
	n := 0
	for _, tx := range d.txs {
		parties := map[string]bool{tx.From: true}
		if tx.To != "" {
			parties[tx.To] = true
		}
		for _, f := range tx.Transfers {
			parties[f.From], parties[f.To] = true, true
		}
		delete(parties, "")
		n += len(parties)
	}
	return n
}

// putBooks stores d's transactions and statement and returns a key
// subscribed to d's address (booksKey).
func putBooks(t *testing.T, db *store.DB, d booksData) query.APIKey {
	t.Helper()
	key := booksKey(t, db, d.addr)
	ctx := context.Background()
	if err := db.PutTransactions(ctx, "ETH", d.txs); err != nil {
		t.Fatal(err)
	}
	if err := db.PutStatement(ctx, "ETH", d.changes, nil, d.balances); err != nil {
		t.Fatal(err)
	}
	return key
}

// booksKey is a new API key ("books") subscribed to address, which is
// covered from block 0.
func booksKey(t *testing.T, db *store.DB, address string) query.APIKey {
	t.Helper()
	key := newKey(t, db, "books")
	if _, err := db.Subscribe(context.Background(), key.AccountID, "ETH", address); err != nil {
		t.Fatal(err)
	}
	cover(t, db, address)
	return key
}

// cover makes address covered from block 0, as a finished backfill does.
func cover(t *testing.T, db *store.DB, address string) {
	t.Helper()
	ctx := context.Background()
	if err := db.MarkSynced(ctx, "ETH", []string{address}, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := db.StoreBackfill(ctx, "ETH", query.BackfillJob{Addresses: []string{address}, Low: 0, Next: 0}, nil, nil, -1); err != nil {
		t.Fatal(err)
	}
}

// TestTxRangeWithoutDocuments: a transactions range over rows written
// before migration 0002 (no document in tx_addresses or transactions,
// every other block here) reads them from the transactions and transfers
// tables: the same pages as with documents, in what those tables hold,
// and the model's, kind filters included (the fetcher of those rows wrote
// a transaction's value and ERC-20 Transfer logs only, as here). Before
// it, such a range answered an error. The seed is printed on failure.
func TestTxRangeWithoutDocuments(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, _ *testenv.Clock) {
		ctx := context.Background()
		rng := testenv.Rand(t, 2)
		d := genBooks(rng)
		for i := range d.txs {
			tx := &d.txs[i]
			var fs []query.Transfer
			native := false
			for _, f := range tx.Transfers {
				switch {
				case f.Contract == "" && !native:
					native = true
					fs = append(fs, query.Transfer{Position: -1, Kind: query.KindTransaction, Asset: query.AssetNative, From: tx.From, To: tx.To, Amount: f.Amount})
				case f.Contract != "":
					fs = append(fs, query.Transfer{Position: len(fs), Kind: query.KindToken, Asset: query.AssetERC20, Contract: f.Contract, From: f.From, To: f.To, Amount: f.Amount})
				}
			}
			tx.Transfers = fs
		}
		key := booksKey(t, db, d.addr)
		if err := db.PutTransactions(ctx, "ETH", d.txs); err != nil {
			t.Fatal(err)
		}
		// What the tables hold of a transaction: its columns and its
		// transfers' (with the kinds of that fetcher).
		columns := func(tx query.Transaction) string {
			s := fmt.Sprintf("%s %d/%d %s %s>%s %s %s %s", tx.Hash, tx.BlockNumber, tx.Index, tx.BlockTime.UTC().Format(time.RFC3339), tx.From, tx.To, tx.Value, tx.Fee, tx.Status)
			for _, f := range tx.Transfers {
				s += fmt.Sprintf(" [%d %s %s %s %s>%s %s]", f.Position, f.Kind, f.Asset, f.Contract, f.From, f.To, f.Amount)
			}
			return s
		}
		read := func(r query.Range, size, budget int) ([]string, []string) {
			var hashes, txs []string
			var after *query.TxCursor
			for pages := 0; ; pages++ {
				if pages > 1000 {
					t.Fatalf("range %+v: more than 1000 pages", r)
				}
				_, page, err := db.SubscriptionTxRange(ctx, key.AccountID, "ETH", d.addr, r, after, size, budget)
				if err != nil {
					t.Fatalf("range %+v: %v", r, err)
				}
				for _, tx := range page.Txs {
					hashes, txs = append(hashes, tx.Hash), append(txs, columns(tx))
				}
				if page.Next == nil {
					return hashes, txs
				}
				after = page.Next
			}
		}
		type done struct {
			r            query.Range
			size, budget int
			txs          []string
		}
		var reads []done
		for range 40 {
			r := genRange(rng, d)
			size, budget := 1+rng.IntN(9), 1+rng.IntN(40)
			hashes, txs := read(r, size, budget)
			if want := wantTxs(d, r); !slices.Equal(hashes, want) {
				t.Fatalf("range %+v with documents:\n got %v\nwant %v", r, hashes, want)
			}
			reads = append(reads, done{r, size, budget, txs})
		}
		if err := db.ForgetTxDocuments(ctx); err != nil {
			t.Fatal(err)
		}
		for _, rd := range reads {
			if _, txs := read(rd.r, rd.size, rd.budget); !slices.Equal(txs, rd.txs) {
				t.Fatalf("range %+v without documents:\n got %v\nwant %v", rd.r, txs, rd.txs)
			}
		}
	})
}

// TestPlainPageGenericPlan: on PostgreSQL the statement page runs its
// generic plan from the first request on, whatever the statistics say.
// Where one address holds nearly all of the statement's rows (a
// treasury's database, BenchmarkBooks'), PostgreSQL left to choose
// planned the page for its parameters at every request (250–600 µs of
// its CPU at 1,000,000 rows): 12 custom plans in 12 runs here.
func TestPlainPageGenericPlan(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := newKey(t, db, "plans")
	// 20,000 rows for one address, one for each of 99 others; Seed
	// analyses the tables.
	if err := benchdata.Seed(ctx, db, benchdata.Config{Chain: "ETH", Account: key.AccountID, Addresses: 100,
		Transactions: 1000, HotEvery: 50, StatementRows: 20_000}); err != nil {
		t.Fatal(err)
	}
	custom, generic, err := db.PlainPagePlans(ctx, key.AccountID, "ETH", benchdata.Address(1), 12)
	if err != nil {
		t.Fatal(err)
	}
	if custom != 0 || generic != 12 {
		t.Fatalf("12 runs of the plain statement page: %d custom plans, %d generic; want the generic plan each time", custom, generic)
	}
}
