package api_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/utxo"
)

// regtestTpub is BIP 32's first test vector's master key, as a tpub.
const regtestTpub = "tpubD6NzVbkrYhZ4XgiXtGrdW5XDAPFCL9h7we1vwNCpn8tGbBcgfVYjXyhWo4E1xkh56hjod1RhGjxbaTLV3X4FyWuejifB9jusQ46QzG87VKp"

// walletEnv is an API serving ETH and BTCREGTEST, Bitcoin's regtest.
func walletEnv(t *testing.T, dsn string) *env {
	regtest, err := utxo.NetworkByName("bitcoin-regtest")
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, dsn, func(c *api.Config) {
		c.Chains = append(c.Chains, "BTCREGTEST")
		c.Syntax["BTCREGTEST"] = utxo.Syntax{Network: regtest}
	})
}

// TestWallet: a wallet of a receive and a change branch is created with
// its gap limit's addresses of each, derived as the family derives them
// and each subscribed; the same PUT again answers it, another one for
// the name is 409; DELETE unsubscribes its addresses.
func TestWallet(t *testing.T) {
	for _, db := range testenv.DBs() {
		t.Run(db.Name, func(t *testing.T) { testWallet(t, walletEnv(t, db.DSN(t))) })
	}
}

func testWallet(t *testing.T, e *env) {
	{
		const path = "/v1/chains/BTCREGTEST/wallets/treasury"
		recv, change := "wpkh([d34db33f/84h/1h/0h]"+regtestTpub+"/0/*)", "wpkh([d34db33f/84h/1h/0h]"+regtestTpub+"/1/*)"
		body := `{"descriptors":[{"descriptor":"` + recv + `"},{"descriptor":"` + change + `","internal":true}],"gap_limit":5}`
		r := e.send("PUT", path, body, e.alice)
		e.want(r, 200, 0)
		var w struct {
			Name        string `json:"name"`
			GapLimit    int    `json:"gap_limit"`
			Descriptors []struct {
				Descriptor   string `json:"descriptor"`
				Internal     bool   `json:"internal"`
				DerivedCount int    `json:"derived_count"`
				NextIndex    int    `json:"next_index"`
			} `json:"descriptors"`
			AddressCount int `json:"address_count"`
			Used         int `json:"used_address_count"`
		}
		if err := json.Unmarshal(r.body, &w); err != nil {
			t.Fatal(err)
		}
		sum, _ := utxo.DescriptorChecksum(recv)
		if w.Name != "chains/BTCREGTEST/wallets/treasury" || w.GapLimit != 5 || w.AddressCount != 10 || w.Used != 0 || len(w.Descriptors) != 2 ||
			w.Descriptors[0].Descriptor != recv+"#"+sum || w.Descriptors[0].DerivedCount != 5 || w.Descriptors[0].NextIndex != 0 ||
			w.Descriptors[0].Internal || !w.Descriptors[1].Internal {
			t.Fatalf("wallet %s", r.body)
		}
		regtest, _ := utxo.NetworkByName("bitcoin-regtest")
		d, err := utxo.ParseDescriptor(regtest, recv)
		if err != nil {
			t.Fatal(err)
		}
		want, err := d.DeriveRange(0, 5)
		if err != nil {
			t.Fatal(err)
		}
		r = e.do("GET", path+"/addresses", e.alice)
		e.want(r, 200, 0)
		var as struct {
			Addresses []struct {
				Address    string `json:"address"`
				Descriptor int    `json:"descriptor"`
				Index      int    `json:"index"`
				Internal   bool   `json:"internal"`
				Used       bool   `json:"used"`
			} `json:"addresses"`
		}
		if err := json.Unmarshal(r.body, &as); err != nil || len(as.Addresses) != 10 {
			t.Fatalf("addresses %s, %v", r.body, err)
		}
		for i, a := range as.Addresses[:5] {
			if a.Address != want[i].String || a.Descriptor != 0 || a.Index != i || a.Internal || a.Used {
				t.Errorf("address %d: %+v, want %s", i, a, want[i].String)
			}
		}
		if a := as.Addresses[9]; a.Descriptor != 1 || a.Index != 4 || !a.Internal {
			t.Errorf("the last address %+v, want the change branch's index 4", a)
		}
		e.want(e.do("GET", "/v1/chains/BTCREGTEST/addresses/"+want[3].String, e.alice), 200, 0)
		e.want(e.do("GET", "/v1/chains/BTCREGTEST/addresses/"+want[3].String, e.bob), 404, 5)
		r = e.do("GET", path+"/balances", e.alice)
		e.want(r, 200, 0)
		if string(r.body) != `{"balances":[]}`+"\n" {
			t.Errorf("an unused wallet's balances %s", r.body)
		}

		e.want(e.send("PUT", path, body, e.alice), 200, 0)
		e.want(e.send("PUT", path, `{"descriptors":[{"descriptor":"`+recv+`"}],"gap_limit":5}`, e.alice), 409, 6)
		e.want(e.do("GET", path, e.bob), 404, 5)

		e.want(e.do("DELETE", path, e.alice), 200, 0)
		e.want(e.do("GET", path, e.alice), 404, 5)
		e.want(e.do("GET", "/v1/chains/BTCREGTEST/addresses/"+want[3].String, e.alice), 404, 5)
		e.want(e.do("DELETE", path, e.alice), 404, 5)
	}
}

// TestWalletRefused: what a wallet request gets wrong is a 400 naming
// the rule.
func TestWalletRefused(t *testing.T) {
	e := walletEnv(t, filepath.Join(t.TempDir(), "addrd.db"))
	const path = "/v1/chains/BTCREGTEST/wallets/w"
	desc := func(d string) string { return `{"descriptors":[{"descriptor":"` + d + `"}]}` }
	for _, c := range []struct{ name, path, body, want string }{
		{"BadChecksum", path, desc("wpkh(" + regtestTpub + "/0/*)#aaaaaaaa"), "checksum"},
		{"Hardened", path, desc("wpkh(" + regtestTpub + "/0h/*)"), "hardened"},
		{"Unranged", path, desc("wpkh(" + regtestTpub + "/0/1)"), "ends in /*"},
		{"Mainnet", path, desc("wpkh(xpub661MyMwAqRbcFtXgS5sYJABqqG9YLmC4Q1Rdap9gSE8NqtwybGhePY2gZ29ESFjqJoCu1Rupje8YtGqsefD265TMg7usUDFdp6W1EGMcet8/0/*)"), "xpub"},
		{"GapLimit", path, `{"descriptors":[{"descriptor":"wpkh(` + regtestTpub + `/0/*)"}],"gap_limit":1001}`, "gap limit 1001"},
		{"NoDescriptor", path, `{"descriptors":[]}`, "1 to 8 descriptors"},
		{"UnknownField", path, `{"descriptors":[],"xpub":"x"}`, "the body must be one JSON object"},
		{"Twice", path, `{"descriptors":[{"descriptor":"wpkh(` + regtestTpub + `/0/*)"},{"descriptor":"wpkh(` + regtestTpub + `/0/*)"}]}`, "given twice"},
		{"BadName", "/v1/chains/BTCREGTEST/wallets/Treasury", desc("wpkh(" + regtestTpub + "/0/*)"), "a wallet's name"},
		{"EVMChain", "/v1/chains/ETH/wallets/w", desc("wpkh(" + regtestTpub + "/0/*)"), "chain ETH has no descriptor wallets"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.send("PUT", c.path, c.body, e.alice)
			e.want(r, 400, 3)
			if !strings.Contains(string(r.body), c.want) {
				t.Errorf("%s, want it to say %q", r.body, c.want)
			}
		})
	}
}
