package fetch_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/fetch"
)

// TestSyncFair: a requester's bulk subscribe, four sync batches of low
// addresses, does not delay another requester's first subscription, the
// highest address: it is synced by the first step after it, within the
// bound of ⌈requesters waiting / sync batch⌉ steps, while the bulk takes
// its four.
func TestSyncFair(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		const batch = 10
		ctx := context.Background()
		e := newEnv(t, dsn, fetch.Config{SyncBatch: batch, BackfillBlocks: 1})
		e.fetch()
		for i := range 4 * batch {
			if _, err := e.db.Subscribe(ctx, e.account, chain, fmt.Sprintf("0x%040x", 0x1000+i)); err != nil {
				t.Fatal(err)
			}
		}
		other, _, err := e.db.CreateAPIKey(ctx, "bob")
		if err != nil {
			t.Fatal(err)
		}
		const last = "0xffffffffffffffffffffffffffffffffffffffff"
		if _, err := e.db.Subscribe(ctx, other.AccountID, chain, last); err != nil {
			t.Fatal(err)
		}
		pending := func() (bulk int, other bool) {
			tracked, err := e.db.Tracked(ctx, chain)
			if err != nil {
				t.Fatal(err)
			}
			for _, tr := range tracked {
				switch {
				case !tr.NeedsSync:
				case tr.Address == last:
					other = true
				default:
					bulk++
				}
			}
			return bulk, other
		}
		for step := 1; ; step++ {
			e.fetch()
			bulk, waiting := pending()
			if !waiting {
				t.Logf("the other requester's address synced in step %d, with %d of the bulk's %d still waiting", step, bulk, 4*batch)
				if step > 1 {
					t.Errorf("the other requester's address synced in step %d, want 1", step)
				}
				break
			}
			if step > 10 {
				t.Fatal("the other requester's address not synced in 10 steps")
			}
		}
	})
}
