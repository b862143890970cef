package main

import (
	"reflect"
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
