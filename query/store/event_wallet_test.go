package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// TestAccountEventsWallet: a requester's feed labels the events of an
// address one of its wallets derived with the wallet (the first by name
// of two) and whether the address is on a change branch; another
// requester subscribed to the same address sees no label, nor does an
// address no wallet derived.
func TestAccountEventsWallet(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, clk *testenv.Clock) {
		ctx := context.Background()
		alice, bob := newKey(t, db, "alice").AccountID, newKey(t, db, "bob").AccountID
		w := func(id string) query.Wallet {
			return query.Wallet{Chain: "ETH", ID: id, GapLimit: 1, Created: clk.Now(), Descriptors: []query.WalletDescriptor{
				{Descriptor: "recv", Derived: 1, Used: -1}, {Descriptor: "change", Internal: true, Derived: 1, Used: -1}}}
		}
		for _, id := range []string{"zeta", "alpha"} {
			if _, err := db.CreateWallet(ctx, alice, w(id), []query.WalletAddress{{Address: addrA, Descriptor: 0}, {Address: addrB, Descriptor: 1}}); err != nil {
				t.Fatal(err)
			}
		}
		payThree(t, db, alice, bob)
		for _, tc := range []struct {
			account int64
			want    map[string]string
		}{
			{alice, map[string]string{addrA: "chains/ETH/wallets/alpha false", addrB: "chains/ETH/wallets/alpha true", addrC: " false"}},
			{bob, map[string]string{addrA: " false", addrB: " false", addrC: " false"}},
		} {
			page, err := db.AccountEvents(ctx, tc.account, -1, query.EventFilter{}, 100)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, e := range page.Events {
				got[e.Address] = fmt.Sprintf("%s %v", e.Wallet, e.WalletInternal)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("account %d's events labelled %v, want %v", tc.account, got, tc.want)
			}
		}
	})
}

// TestAccountEventsWalletFilter: a read filtered to one of the account's
// wallets returns the events of the addresses that wallet derived alone,
// each labelled with it (not the first by name of the wallets that derived
// it), and nothing for a wallet the account does not hold, another
// account's included.
func TestAccountEventsWalletFilter(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, clk *testenv.Clock) {
		ctx := context.Background()
		alice, bob := newKey(t, db, "alice").AccountID, newKey(t, db, "bob").AccountID
		w := func(id string, descs ...query.WalletDescriptor) query.Wallet {
			return query.Wallet{Chain: "ETH", ID: id, GapLimit: 1, Created: clk.Now(), Descriptors: descs}
		}
		recv := query.WalletDescriptor{Descriptor: "recv", Derived: 1, Used: -1}
		change := query.WalletDescriptor{Descriptor: "change", Internal: true, Derived: 1, Used: -1}
		if _, err := db.CreateWallet(ctx, alice, w("zeta", recv, change), []query.WalletAddress{{Address: addrA, Descriptor: 0}, {Address: addrB, Descriptor: 1}}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.CreateWallet(ctx, alice, w("alpha", recv), []query.WalletAddress{{Address: addrA, Descriptor: 0}}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.CreateWallet(ctx, bob, w("bobs", recv), []query.WalletAddress{{Address: addrC, Descriptor: 0}}); err != nil {
			t.Fatal(err)
		}
		payThree(t, db, alice, bob)
		for _, tc := range []struct {
			account int64
			wallet  string
			want    map[string]string
		}{
			{alice, "zeta", map[string]string{addrA: "chains/ETH/wallets/zeta false", addrB: "chains/ETH/wallets/zeta true"}},
			{alice, "alpha", map[string]string{addrA: "chains/ETH/wallets/alpha false"}},
			{alice, "bobs", map[string]string{}},
			{alice, "none", map[string]string{}},
			{bob, "zeta", map[string]string{}},
			{bob, "bobs", map[string]string{addrC: "chains/ETH/wallets/bobs false"}},
		} {
			page, err := db.AccountEvents(ctx, tc.account, -1, query.EventFilter{Chain: "ETH", Wallet: tc.wallet}, 100)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, e := range page.Events {
				if e.Kind != query.EventBalanceChange {
					continue
				}
				got[e.Address] = fmt.Sprintf("%s %v", e.Wallet, e.WalletInternal)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("account %d, wallet %s: events %v, want %v", tc.account, tc.wallet, got, tc.want)
			}
		}
	})
}

// payThree subscribes accounts to addrA, addrB and addrC and stores
// block 1, paying each 5 in one transaction.
func payThree(t *testing.T, db *store.DB, accounts ...int64) {
	t.Helper()
	ctx := context.Background()
	var changes []query.BalanceChange
	for _, a := range []string{addrA, addrB, addrC} {
		for _, acct := range accounts {
			if _, err := db.Subscribe(ctx, acct, "ETH", a); err != nil {
				t.Fatal(err)
			}
		}
		changes = append(changes, query.BalanceChange{Chain: "ETH", Address: a, Block: 1, Time: block(1).Time, Amount: query.AmountOf(5),
			BalanceAfter: query.AmountOf(5), Causes: []query.Cause{{Kind: query.KindTransaction, TxHash: "0x01", Amount: query.AmountOf(5)}}})
	}
	if err := db.StoreBlocks(ctx, "ETH", []query.BlockData{{Block: block(1), Changes: changes}}); err != nil {
		t.Fatal(err)
	}
}
