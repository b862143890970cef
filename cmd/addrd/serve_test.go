package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/query"
)

func TestParseChains(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []string
		want []chain
	}{
		{"NameURL", []string{"ETH=http://node:8545"}, []chain{{Name: "ETH", RPC: "http://node:8545"}}},
		{"URLWithEquals", []string{"POLYGON=https://node/rpc?key=a=b"}, []chain{{Name: "POLYGON", RPC: "https://node/rpc?key=a=b"}}},
		{"Symbol", []string{"MYL2:XYZ=ws://node:8546"}, []chain{{Name: "MYL2", RPC: "ws://node:8546", Native: query.NativeCoin{Symbol: "XYZ", Decimals: 18}}}},
		{"SymbolDecimals", []string{"X:USDX:6=https://node"}, []chain{{Name: "X", RPC: "https://node", Native: query.NativeCoin{Symbol: "USDX", Decimals: 6}}}},
		{"Several", []string{"ETH=http://a:1", "BSC=http://b:1"}, []chain{{Name: "ETH", RPC: "http://a:1"}, {Name: "BSC", RPC: "http://b:1"}}},
		{"Bitcoin", []string{"BTC=http://u:p@node:8332", "LTCREGTEST=http://node:19443"}, []chain{
			{Name: "BTC", RPC: "http://u:p@node:8332", Native: query.NativeCoin{Symbol: "BTC", Decimals: 8}, Family: query.FamilyUTXO, Network: network(t, "BTC")},
			{Name: "LTCREGTEST", RPC: "http://node:19443", Native: query.NativeCoin{Symbol: "LTC", Decimals: 8}, Family: query.FamilyUTXO, Network: network(t, "LTCREGTEST")}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseChains(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// network is the table's row of a UTXO chain name.
func network(t *testing.T, name string) query.Network {
	t.Helper()
	n, ok := query.NetworkNamed(name)
	if !ok {
		t.Fatalf("no network named %s", name)
	}
	return n
}

// TestParseChainsErrors: a mistyped --chain is refused with the part at
// fault, never with a node URL's key (the fuzz target looks further).
func TestParseChainsErrors(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"NoName", "https://mainnet.infura.io/v3/KEY", "--chain (not shown: it may hold a URL): want NAME=RPC_URL"},
		{"ColonForEquals", "ETH:https://mainnet.infura.io/v3/KEY", "--chain (not shown: it may hold a URL): want NAME=RPC_URL"},
		{"LowerName", "eth=http://node", `--chain "eth": want NAME=RPC_URL`},
		{"Symbol", "ETH:P-L=http://node", `native coin symbol "P-L"`},
		{"Decimals", "ETH:POL:99=http://node", `native coin decimals "99"`},
		{"NoScheme", "ETH=//KEY", `"?" is not an http(s) or ws(s) URL`},
		{"Scheme", "ETH=ftp://u:KEY@node/KEY", `"ftp://redacted@node/redacted" is not an http(s) or ws(s) URL`},
		{"Twice", "ETH=http://a", "--chain ETH given twice"},
		{"BitcoinCoin", "BTC:XBT=http://node", "--chain BTC: BTC is Bitcoin, whose coin is BTC: give BTC=RPC_URL"},
		{"BitcoinWebSocket", "BTCREGTEST=ws://u:KEY@node", `"ws://redacted@node": a Bitcoin regtest node is read over http(s)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := []string{c.in}
			if c.name == "Twice" {
				in = append(in, c.in)
			}
			_, err := parseChains(in)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "KEY") {
				t.Fatalf("parseChains(%q) = %v, want an error with %q and no KEY", c.in, err, c.want)
			}
		})
	}
}
