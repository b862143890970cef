package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/store"
)

// oddRunes are what the strings of TestTransactionPages' transactions
// are made of: the documents' framing bytes (digits, ':', '-', the
// letters that mark a state, label or page row), bytes JSON escapes, and
// multibyte UTF-8, so that a length in characters rather than bytes, or
// a document split at the wrong colon, shows.
var oddRunes = []rune("0123456789::--PSAL \"\\<é日本🙂")

func oddString(rng *rand.Rand) string {
	var b strings.Builder
	for range rng.IntN(12) {
		b.WriteRune(oddRunes[rng.IntN(len(oddRunes))])
	}
	return b.String()
}

// TestTransactionPages: a requester's pages of transactions are the
// address's transactions of its covered range, newest first, whole and
// in order, for random transactions whose strings hold the documents'
// framing bytes and multibyte UTF-8: pages of every size up to more than
// the address has (so that some page is exactly the limit and the next
// empty), with rows written before documents existed (read by joins),
// and not subscribed. The seed is printed on failure.
func TestTransactionPages(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, _ *testenv.Clock) {
		ctx := context.Background()
		rng := testenv.Rand(t, 27)
		alice := newKey(t, db, "alice")
		bob := newKey(t, db, "bob")
		a, b := fmt.Sprintf("0x%040x", 0xa1), fmt.Sprintf("0x%040x", 0xb1)
		if _, err := db.Subscribe(ctx, alice.AccountID, "ETH", a); err != nil {
			t.Fatal(err)
		}
		// Covered from a random block: the pages hold none below it.
		if err := db.MarkSynced(ctx, "ETH", []string{a}, 100, 0); err != nil {
			t.Fatal(err)
		}
		job := query.BackfillJob{Addresses: []string{a}, Low: 0, Next: 100}
		if err := db.StoreBackfill(ctx, "ETH", job, nil, nil, int64(rng.IntN(4))-1); err != nil {
			t.Fatal(err)
		}
		var txs []query.Transaction
		for n := range 1 + rng.IntN(30) {
			from, to := a, b
			if rng.IntN(2) == 0 {
				from, to = b, a
			}
			tr := tx(uint64(1+n/2), uint(n%2), from, to)
			tr.Detail = evm.TxDetail{Method: oddString(rng), RevertReason: oddString(rng), Input: oddString(rng)}.JSON()
			tr.Transfers[1].Name, tr.Transfers[1].Symbol = oddString(rng), oddString(rng)
			if rng.IntN(4) == 0 {
				tr.Transfers = tr.Transfers[:1]
			}
			txs = append(txs, tr)
		}
		if err := db.PutTransactions(ctx, "ETH", txs); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(3) == 0 {
			// Rows of even blocks lose their documents, as rows written
			// before migration 0002 have none: a page holding one is read
			// by joins, the others' transactions still from their
			// documents, whole.
			if err := db.ForgetTxDocuments(ctx); err != nil {
				t.Fatal(err)
			}
		}
		sub, err := db.Subscription(ctx, alice.AccountID, "ETH", a)
		if err != nil {
			t.Fatal(err)
		}
		all, err := db.Transactions(ctx, "ETH", a, nil, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var want []query.Transaction
		for _, t := range all {
			if t.BlockNumber >= sub.HistoryStart {
				want = append(want, t)
			}
		}
		sub.Created = time.Time{}
		for size := 1; size <= len(want)+1; size++ {
			got := txPages(db, alice.AccountID, a, size, func(s query.Subscription, err error) bool {
				if err != nil {
					t.Fatalf("pages of %d: %v", size, err)
				}
				if s != sub {
					t.Fatalf("pages of %d: subscription %+v, want %+v", size, s, sub)
				}
				return true
			})
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("pages of %d:\n%+v\nwant %+v", size, got, want)
			}
		}
		for _, acct := range []int64{bob.AccountID, alice.AccountID + bob.AccountID + 7} {
			if _, _, err := db.SubscriptionTransactions(ctx, acct, "ETH", a, nil, 10); !errors.Is(err, query.ErrNotSubscribed) {
				t.Errorf("account %d, not subscribed: %v, want ErrNotSubscribed", acct, err)
			}
		}
	})
}

// txPages reads account's transactions of address, newest first, in pages
// of size, handing each page's subscription and error to check, which
// says whether to read on, and returns the transactions read.
func txPages(db *store.DB, account int64, address string, size int, check func(query.Subscription, error) bool) []query.Transaction {
	var (
		got   []query.Transaction
		after *query.TxCursor
	)
	for {
		sub, page, err := db.SubscriptionTransactions(context.Background(), account, "ETH", address, after, size)
		if !check(sub, err) {
			return got
		}
		got = append(got, page...)
		if len(page) < size {
			return got
		}
		last := page[len(page)-1]
		after = &query.TxCursor{BlockNumber: last.BlockNumber, Index: last.Index}
	}
}
