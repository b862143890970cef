package utxo_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/query/utxo"
)

// TestNewWalletRefused: a clear error naming the rule for a gap limit out
// of bounds, an unranged descriptor, descriptors of two networks, none.
func TestNewWalletRefused(t *testing.T) {
	const tpub = "tpubD6NzVbkrYhZ4XgiXtGrdW5XDAPFCL9h7we1vwNCpn8tGbBcgfVYjXyhWo4E1xkh56hjod1RhGjxbaTLV3X4FyWuejifB9jusQ46QzG87VKp"
	desc := func(net, s string) *utxo.Descriptor {
		t.Helper()
		d, err := utxo.ParseDescriptor(network(t, net), s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	ranged := desc("bitcoin-regtest", "wpkh("+tpub+"/0/*)")
	for _, tc := range []struct {
		name  string
		gap   int
		descs []*utxo.Descriptor
		want  string
	}{
		{"GapZero", 0, []*utxo.Descriptor{ranged}, "gap limit 0: it must be 1 to 1000"},
		{"GapTooLarge", 1001, []*utxo.Descriptor{ranged}, "gap limit 1001"},
		{"None", 20, nil, "a wallet needs a descriptor"},
		{"Unranged", 20, []*utxo.Descriptor{desc("bitcoin-regtest", "wpkh("+tpub+"/0/1)")}, "end in /*"},
		{"TwoNetworks", 20, []*utxo.Descriptor{ranged, desc("litecoin-regtest", "wpkh("+tpub+"/1/*)")}, "is of litecoin-regtest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := utxo.NewWallet(tc.gap, tc.descs...)
			if !errors.Is(err, utxo.ErrInvalidDescriptor) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewWallet: %v, want %q", err, tc.want)
			}
		})
	}
	w, err := utxo.NewWallet(3, ranged)
	if err != nil {
		t.Fatal(err)
	}
	as := w.Addresses()
	if len(as) != 3 {
		t.Fatalf("%d addresses, want 3", len(as))
	}
	more, err := w.MarkUsed(as[2])
	if err != nil || len(more) != 3 || len(w.Addresses()) != 6 {
		t.Errorf("MarkUsed(index 2) derived %v, %v; want indexes 3-5", more, err)
	}
	if p, ok := w.Lookup(more[2]); !ok || p.Index != 5 {
		t.Errorf("Lookup(index 5) = %+v, %v", p, ok)
	}
	if _, err := w.MarkUsed("bcrt1qnotmine"); err == nil {
		t.Error("MarkUsed of an address not the wallet's: no error")
	}
}
