package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/utxo"
	"github.com/wharfhq/wharf/query/webhook"
)

// walletHookEnv is walletEnv with webhooks.
func walletHookEnv(t *testing.T, dsn string) *env {
	regtest, err := utxo.NetworkByName("bitcoin-regtest")
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, dsn, func(c *api.Config) {
		c.Chains = append(c.Chains, "BTCREGTEST")
		c.Syntax["BTCREGTEST"] = utxo.Syntax{Network: regtest}
		c.Webhooks = webhook.New(webhook.Config{Store: c.Store.(webhook.Store), Policy: webhook.Policy{AllowHTTP: true, AllowPrivate: true}})
	}, store.WithMaxWebhooks(3))
}

// walletFeed is a page of GET /v1/events with each event's address and
// wallet label.
type walletFeed struct {
	Events []struct {
		Type string
		Data struct {
			Address string `json:"address"`
		}
		Wallet *struct {
			Name     string `json:"name"`
			Internal bool   `json:"internal"`
		} `json:"wallet"`
	}
}

// TestEventsWalletFilter: wallet= on the feed returns the events of the
// addresses that wallet derived (its receive and change branches), each
// labelled with it, and nothing of an address outside it; a webhook's
// wallet filter is stored and answered by its name, and sets the
// endpoint's chain. A bad wallet is a 400 naming the rule.
func TestEventsWalletFilter(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		e := walletHookEnv(t, dsn)
		const name = "chains/BTCREGTEST/wallets/treasury"
		recv, change := "wpkh([d34db33f/84h/1h/0h]"+regtestTpub+"/0/*)", "wpkh([d34db33f/84h/1h/0h]"+regtestTpub+"/1/*)"
		e.want(e.send("PUT", "/v1/"+name, `{"descriptors":[{"descriptor":"`+recv+`"},{"descriptor":"`+change+`","internal":true}],"gap_limit":1}`, e.alice), 200, 0)
		regtest, _ := utxo.NetworkByName("bitcoin-regtest")
		addr := func(desc string, i uint32) string {
			d, err := utxo.ParseDescriptor(regtest, desc)
			if err != nil {
				t.Fatal(err)
			}
			as, err := d.DeriveRange(i, i+1)
			if err != nil {
				t.Fatal(err)
			}
			return as[0].String
		}
		r0, c0, outside := addr(recv, 0), addr(change, 0), addr(recv, 7) // 7: beyond the gap limit, not derived
		e.want(e.do("PUT", "/v1/chains/BTCREGTEST/addresses/"+outside, e.alice), 200, 0)
		e.storeChange("BTCREGTEST", 1, r0, c0, outside)

		read := func(q string) map[string]string {
			t.Helper()
			r := e.do("GET", "/v1/events"+q, e.alice)
			e.want(r, 200, 0)
			var f walletFeed
			if err := json.Unmarshal(r.body, &f); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, ev := range f.Events {
				if ev.Type != "balance_change" {
					continue
				}
				got[ev.Data.Address] = "none"
				if ev.Wallet != nil {
					got[ev.Data.Address] = ev.Wallet.Name + " " + map[bool]string{true: "internal", false: "external"}[ev.Wallet.Internal]
				}
			}
			return got
		}
		if got := read("?wallet=" + name); len(got) != 2 || got[r0] != name+" external" || got[c0] != name+" internal" {
			t.Errorf("wallet=%s: %v, want %s and %s of it", name, got, r0, c0)
		}
		if got := read("?chain=BTCREGTEST&kind=balance_change&wallet=" + name); len(got) != 2 {
			t.Errorf("wallet with its chain and a kind: %v", got)
		}
		if got := read("?wallet=chains/BTCREGTEST/wallets/other"); len(got) != 0 {
			t.Errorf("a wallet alice does not hold: %v", got)
		}
		if got := read(""); len(got) != 3 || got[outside] != "none" {
			t.Errorf("unfiltered: %v", got)
		}
		if r := e.do("GET", "/v1/events?wallet="+name, e.bob); strings.Contains(string(r.body), r0) {
			t.Errorf("bob reads alice's wallet: %s", r.body)
		}

		for _, c := range []struct{ q, want string }{
			{"?wallet=treasury", "chains/{chain}/wallets/{wallet}"},
			{"?wallet=chains/BTCREGTEST/treasury", "chains/{chain}/wallets/{wallet}"},
			{"?wallet=chains/NOPE/wallets/treasury", "unknown chain"},
			{"?wallet=chains/BTCREGTEST/wallets/Treasury", "1 to 63 of a-z"},
			{"?wallet=chains/BTCREGTEST/wallets/", "1 to 63 of a-z"},
			{"?wallet=chains/ETH/wallets/treasury", "no descriptor wallets"},
			{"?chain=ETH&wallet=" + name, "not of the chain filter"},
		} {
			r := e.do("GET", "/v1/events"+c.q, e.alice)
			e.want(r, 400, 3)
			if !strings.Contains(string(r.body), c.want) {
				t.Errorf("%s: %s, want a message with %q", c.q, r.body, c.want)
			}
		}

		// Webhooks take the same filter.
		r := e.send("POST", "/v1/webhooks", `{"url":"http://127.0.0.1:1/","wallet":"`+name+`"}`, e.alice)
		e.want(r, 200, 0)
		var h struct{ ID, Chain, Wallet string }
		json.Unmarshal(r.body, &h)
		if h.Wallet != name || h.Chain != "BTCREGTEST" {
			t.Fatalf("created %s", r.body)
		}
		r = e.do("GET", "/v1/webhooks/"+h.ID, e.alice)
		if json.Unmarshal(r.body, &h); h.Wallet != name {
			t.Fatalf("read %s", r.body)
		}
		for _, c := range []struct{ body, want string }{
			{`{"wallet":"treasury"}`, "chains/{chain}/wallets/{wallet}"},
			{`{"chain":"ETH"}`, "not of the chain filter"},
			{`{"wallet":"chains/ETH/wallets/x"}`, "no descriptor wallets"},
		} {
			r := e.send("PATCH", "/v1/webhooks/"+h.ID, c.body, e.alice)
			e.want(r, 400, 3)
			if !strings.Contains(string(r.body), c.want) {
				t.Errorf("PATCH %s: %s, want a message with %q", c.body, r.body, c.want)
			}
		}
		r = e.send("PATCH", "/v1/webhooks/"+h.ID, `{"wallet":""}`, e.alice)
		e.want(r, 200, 0)
		if json.Unmarshal(r.body, &h); h.Wallet != "" || h.Chain != "" {
			t.Fatalf("cleared %s", r.body)
		}
	})
}
