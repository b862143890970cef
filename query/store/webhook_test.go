package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// TestWebhookQueue: an endpoint behind the feed is leased to one holder
// at a time; its run records the cursor under the lease; a change of the
// endpoint takes the lease (the run then records nothing) and keeps the
// recorded cursor unless it restarts it.
func TestWebhookQueue(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, clk *testenv.Clock) {
		ctx := context.Background()
		k, _, _ := db.CreateAPIKey(ctx, "alice")
		w, err := db.CreateWebhook(ctx, query.Webhook{Account: k.AccountID, URL: "https://hooks.example.com/", Secret: "whsec_AAAA"})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := db.ClaimWebhook(ctx, "a", time.Minute); err != nil || ok {
			t.Fatalf("an endpoint with no event after its cursor was claimed: %v %v", ok, err)
		}
		db.Subscribe(ctx, k.AccountID, "ETH", addrA)
		c := query.BalanceChange{Chain: "ETH", Address: addrA, Block: 1, Amount: query.AmountOf(1), BalanceAfter: query.AmountOf(1)}
		if err := db.StoreBlocks(ctx, "ETH", []query.BlockData{{Block: block(1), Changes: []query.BalanceChange{c}}}); err != nil {
			t.Fatal(err)
		}
		got, ok, err := db.ClaimWebhook(ctx, "a", time.Minute)
		if err != nil || !ok || got.ID != w.ID {
			t.Fatalf("claim: %+v %v %v", got, ok, err)
		}
		if _, ok, _ := db.ClaimWebhook(ctx, "b", time.Minute); ok {
			t.Fatal("a leased endpoint was claimed by another holder")
		}
		if err := db.FinishWebhook(ctx, "b", w.ID, query.WebhookOutcome{Cursor: 1}, time.Minute); !errors.Is(err, query.ErrLeaseGone) {
			t.Fatalf("finish by a holder without the lease: %v", err)
		}
		if err := db.FinishWebhook(ctx, "a", w.ID, query.WebhookOutcome{Cursor: 1, NextAttempt: clk.Now(), Release: true,
			Attempts: []query.WebhookAttempt{{Webhook: w.ID, EventID: "evt_1", EventType: "balance_change", Time: clk.Now(), Status: 204}}}, time.Minute); err != nil {
			t.Fatal(err)
		}
		// A change keeps the recorded cursor; a restart sets it.
		stale := w // read before the run recorded cursor 1
		stale.Description = "renamed"
		if err := db.UpdateWebhook(ctx, stale, false); err != nil {
			t.Fatal(err)
		}
		if w, _ = db.Webhook(ctx, k.AccountID, w.ID); w.Cursor != 1 || w.Description != "renamed" {
			t.Fatalf("after a change: %+v", w)
		}
		w.Cursor = 0
		if err := db.UpdateWebhook(ctx, w, true); err != nil {
			t.Fatal(err)
		}
		if w, _ = db.Webhook(ctx, k.AccountID, w.ID); w.Cursor != 0 {
			t.Fatalf("after a replay from 0: %+v", w)
		}
		// A change takes the lease of a run in flight.
		if _, ok, _ := db.ClaimWebhook(ctx, "a", time.Minute); !ok {
			t.Fatal("the replayed endpoint was not claimed")
		}
		if err := db.UpdateWebhook(ctx, w, false); err != nil {
			t.Fatal(err)
		}
		if err := db.FinishWebhook(ctx, "a", w.ID, query.WebhookOutcome{Cursor: 1}, time.Minute); !errors.Is(err, query.ErrLeaseGone) {
			t.Fatalf("finish after the endpoint changed: %v", err)
		}
		if as, err := db.WebhookAttempts(ctx, w.ID, 0, 10); err != nil || len(as) != 1 || as[0].Status != 204 {
			t.Fatalf("log %+v %v", as, err)
		}
	})
}

// TestWebhookWalletFilter: an endpoint's wallet filter is stored with it,
// changed by an update and cleared by one.
func TestWebhookWalletFilter(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, clk *testenv.Clock) {
		ctx := context.Background()
		k, _, _ := db.CreateAPIKey(ctx, "alice")
		w, err := db.CreateWebhook(ctx, query.Webhook{Account: k.AccountID, URL: "https://hooks.example.com/", Secret: "whsec_AAAA",
			Filter: query.EventFilter{Chain: "ETH", Wallet: "treasury"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"treasury", "vault", ""} {
			if w.Filter.Wallet != want {
				w.Filter.Wallet = want
				if err := db.UpdateWebhook(ctx, w, false); err != nil {
					t.Fatal(err)
				}
			}
			got, err := db.Webhook(ctx, k.AccountID, w.ID)
			if err != nil {
				t.Fatal(err)
			}
			list, err := db.Webhooks(ctx, k.AccountID)
			if err != nil || len(list) != 1 {
				t.Fatalf("list %+v %v", list, err)
			}
			if got.Filter.Wallet != want || got.Filter.Chain != "ETH" || list[0].Filter.Wallet != want {
				t.Errorf("wallet filter read %q (listed %q), want %q", got.Filter.Wallet, list[0].Filter.Wallet, want)
			}
		}
	})
}
