package main

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/utxo/devnode"
)

// TestServeDevBitcoin: with btcd installed, addrd serve --dev serves a
// Bitcoin regtest chain beside ETH, prints its demo addresses and a demo
// wallet's descriptors; a demo address and the wallet subscribed get
// their payments, and the wallet derives on past its used addresses.
func TestServeDevBitcoin(t *testing.T) {
	_, err := devnode.Binary()
	testenv.Need(t, "btcd", err)
	srv := startServe(t, "--dev")
	srv.checkOpenAPI(t)
	addrs, descs, keys := srv.printed("dev btc address "), srv.printed("dev btc wallet descriptor "), srv.printed("dev api key ")
	if len(addrs) != 3 || len(descs) != 2 || len(keys) != 1 || len(srv.printed("dev bitcoin chain "+devBTC)) != 1 {
		t.Fatalf("printed %q", srv.lines)
	}
	key := keys[0]
	base := "/v1/chains/" + devBTC
	if status, body := srv.do(t, key, "PUT", base+"/addresses/"+addrs[0]); status != 200 {
		t.Fatalf("PUT %s: %d %s", addrs[0], status, body)
	}
	body := fmt.Sprintf(`{"descriptors":[{"descriptor":%q},{"descriptor":%q,"internal":true}]}`, descs[0], descs[1])
	if status, resp := srv.send(t, key, "PUT", base+"/wallets/demo", body); status != 200 {
		t.Fatalf("PUT wallet: %d %s", status, resp)
	}
	var bal apiBalances
	eventually(t, 30*time.Second, "the demo address's balance", func() bool {
		srv.get(t, key, base+"/addresses/"+addrs[0]+"/balances", &bal)
		return bal.native() != "none" && bal.native() != "0"
	})
	var w apiWallet
	eventually(t, 30*time.Second, "the demo wallet's receive branch derived past its gap limit", func() bool {
		srv.get(t, key, base+"/wallets/demo", &w)
		return w.Used >= 2 && w.Descriptors[0].DerivedCount > 20
	})
	eventually(t, 30*time.Second, "the demo wallet's balance", func() bool {
		srv.get(t, key, base+"/wallets/demo/balances", &bal)
		return bal.native() != "none" && bal.native() != "0"
	})
	var st struct {
		Rows []json.RawMessage `json:"balance_changes"`
	}
	srv.get(t, key, base+"/wallets/demo/balance_changes", &st)
	if len(st.Rows) < 2 {
		t.Errorf("the demo wallet's statement has %d rows", len(st.Rows))
	}
}
