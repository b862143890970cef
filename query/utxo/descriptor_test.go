package utxo_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/address/v2/base58"
	"github.com/btcsuite/btcd/btcutil/v2/hdkeychain"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/utxo"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// asXpub rewrites an extended public key (zpub, vpub...) with mainnet's
// xpub version bytes, as descriptors take it.
func asXpub(t testing.TB, key string) string {
	t.Helper()
	b := base58.Decode(key)
	if len(b) != 82 {
		t.Fatalf("%s: %d bytes", key, len(b))
	}
	copy(b, []byte{0x04, 0x88, 0xb2, 0x1e})
	sum := sha256.Sum256(b[:78])
	sum = sha256.Sum256(sum[:])
	copy(b[78:], sum[:4])
	return base58.Encode(b)
}

func withChecksum(t testing.TB, desc string) string {
	t.Helper()
	sum, err := utxo.DescriptorChecksum(desc)
	if err != nil {
		t.Fatal(err)
	}
	return desc + "#" + sum
}

func TestDescriptorChecksum(t *testing.T) {
	// BIP 380's example.
	if got, err := utxo.DescriptorChecksum("raw(deadbeef)"); err != nil || got != "89f8spxm" {
		t.Errorf("checksum of raw(deadbeef) = %q, %v; want 89f8spxm", got, err)
	}
}

// TestDescriptorVectors derives the addresses of BIP 84's and BIP 86's
// test vectors (account keys of the mnemonic "abandon ... about") and
// BIP 32's first vector.
func TestDescriptorVectors(t *testing.T) {
	const (
		bip84 = "zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs"
		bip86 = "xpub6BgBgsespWvERF3LHQu6CnqdvfEvtMcQjYrcRzx53QJjSxarj2afYWcLteoGVky7D3UKDP9QyrLprQ3VCECoY49yfdDEHGCtMMj92pReUsQ"
		// BIP 32 vector 1: the key of m/0H, and the public key of m/0H/1.
		bip32m0h   = "xpub68Gmy5EdvgibQVfPdqkBBCHxA5htiqg55crXYuXoQRKfDBFA1WEjWgP6LHhwBZeNK1VTsfTFUHCdrfp1bgwQ9xv5ski8PX9rL2dZXvgGDnw"
		bip32m0h1  = "03501e454bf00751f24b1b489aa925215d66af2234e3891c3b21a52bedb3cd711c"
		bip32m0h1x = "xpub6ASuArnXKPbfEwhqN6e3mwBcDTgzisQN1wXN9BJcM47sSikHjJf3UFHKkNAWbWMiGj7Wf5uMash7SyYq527Hqck2AxYysAA7xmALppuCkwQ"
	)
	btc := network(t, "bitcoin")
	tests := []struct {
		name, desc string
		index      uint32
		want       string
	}{
		{"BIP84 receive 0", "wpkh([73c5da0a/84h/0h/0h]" + asXpub(t, bip84) + "/0/*)", 0, "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"},
		{"BIP84 change 0", "wpkh([73c5da0a/84h/0h/0h]" + asXpub(t, bip84) + "/1/*)", 0, "bc1q8c6fshw2dlwun7ekn9qwf37cu2rn755upcp6el"},
		{"BIP86 receive 0", "tr([73c5da0a/86h/0h/0h]" + bip86 + "/0/*)", 0, "bc1p5cyxnuxmeuwuvkwfem96lqzszd02n6xdcjrs20cac6yqjjwudpxqkedrcr"},
		{"BIP86 receive 1", "tr(" + bip86 + "/0/*)", 1, "bc1p4qhjn9zdvkux4e44uhx8tc55attvtyu358kutcqkudyccelu0was9fqzwh"},
		{"BIP86 change 0", "tr(" + bip86 + "/1/*)", 0, "bc1p3qkhfews2uk44qtvauqyr2ttdsw7svhkl9nkm9s9c3x4ax5h60wqwruhk7"},
		{"BIP32 m/0H/1", "pkh(" + bip32m0h + "/1)", 0, p2pkhOf(t, btc, bip32m0h1)},
		{"BIP32 m/0H/*", "pkh(" + bip32m0h + "/*)", 1, p2pkhOf(t, btc, bip32m0h1)},
		{"BIP32 next key", "pkh(" + bip32m0h1x + ")", 0, p2pkhOf(t, btc, bip32m0h1)},
		{"Plain key", "pkh(" + bip32m0h1 + ")", 0, p2pkhOf(t, btc, bip32m0h1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, desc := range []string{tt.desc, withChecksum(t, tt.desc)} {
				d, err := utxo.ParseDescriptor(btc, desc)
				if err != nil {
					t.Fatal(err)
				}
				got, err := d.Derive(tt.index)
				if err != nil || got.String != tt.want {
					t.Errorf("%s: address %d = %q, %v; want %s", desc, tt.index, got.String, err, tt.want)
				}
				if d.String != withChecksum(t, tt.desc) {
					t.Errorf("canonical form %s", d.String)
				}
			}
		})
	}
}

func p2pkhOf(t testing.TB, n *utxo.Network, pubHex string) string {
	t.Helper()
	pub, _ := hex.DecodeString(pubHex)
	h := address.Hash160(pub)
	a, err := utxo.AddressFromScript(n, append(append([]byte{0x76, 0xa9, 0x14}, h...), 0x88, 0xac))
	if err != nil {
		t.Fatal(err)
	}
	return a.String
}

func TestDescriptorRefused(t *testing.T) {
	const (
		xpub = "xpub6BgBgsespWvERF3LHQu6CnqdvfEvtMcQjYrcRzx53QJjSxarj2afYWcLteoGVky7D3UKDP9QyrLprQ3VCECoY49yfdDEHGCtMMj92pReUsQ"
		xprv = "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi"
		tpub = "tpubD6NzVbkrYhZ4XgiXtGrdW5XDAPFCL9h7we1vwNCpn8tGbBcgfVYjXyhWo4E1xkh56hjod1RhGjxbaTLV3X4FyWuejifB9jusQ46QzG87VKp"
	)
	btc := network(t, "bitcoin")
	tests := []struct{ name, desc, rule string }{
		{"BadChecksum", "wpkh(" + xpub + "/0/*)#qqqqqqqq", "checksum #qqqqqqqq is not the descriptor's"},
		{"Hardened", "wpkh(" + xpub + "/0h/*)", "hardened step 0h after an extended public key"},
		{"HardenedApostrophe", "wpkh(" + xpub + "/0'/*)", "hardened step 0' after an extended public key"},
		{"HardenedStar", "wpkh(" + xpub + "/0/*')", "hardened * after an extended public key"},
		{"StarNotLast", "wpkh(" + xpub + "/*/0)", "* must be the last step"},
		{"PrivateKey", "wpkh(" + xprv + "/0/*)", "a private key"},
		{"OtherNetwork", "wpkh(" + tpub + "/0/*)", "bitcoin takes a xpub"},
		{"UnknownKind", "combo(" + xpub + "/0/*)", "not one of pkh(KEY)"},
		{"TrScript", "tr(" + xpub + "/0/*,pk(" + xpub + "/1/*))", "tr with script paths"},
		{"ThresholdZero", "wsh(sortedmulti(0," + xpub + "/0/*))", "threshold 0 of 1 keys"},
		{"ThresholdAbove", "wsh(sortedmulti(3," + xpub + "/0/*," + xpub + "/1/*))", "threshold 3 of 2 keys"},
		{"TooManyKeys", "wsh(sortedmulti(1" + strings.Repeat(","+xpub+"/0/*", 21) + "))", "sortedmulti of 21 keys"},
		{"Mixed", "wsh(sortedmulti(1," + xpub + "/0/*," + xpub + "/1))", "ranged and unranged keys mixed"},
		{"BadStep", "wpkh(" + xpub + "/2147483648/*)", "not an index below 2^31"},
		{"BadCharacter", "wpkh(" + xpub + "/0/*)\n", "outside BIP 380's character set"},
		{"BadOrigin", "wpkh([73c5da0/84h]" + xpub + "/0/*)", "fingerprint \"73c5da0\" is not 8 hex digits"},
		{"ShortKey", "wpkh(02aa)", "hex public key of 2 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := utxo.ParseDescriptor(btc, tt.desc)
			if err == nil {
				t.Fatalf("accepted as %s", d.String)
			}
			if !errors.Is(err, utxo.ErrInvalidDescriptor) || !strings.Contains(err.Error(), tt.rule) {
				t.Errorf("error %q, want one naming %q", err, tt.rule)
			}
		})
	}
	d, err := utxo.ParseDescriptor(btc, "wpkh("+xpub+"/0/*)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.DeriveRange(0, utxo.MaxGapLimit+1); !errors.Is(err, utxo.ErrInvalidDescriptor) {
		t.Errorf("a range of %d addresses: %v", utxo.MaxGapLimit+1, err)
	}
	if _, err := d.Derive(1 << 31); !errors.Is(err, utxo.ErrInvalidDescriptor) {
		t.Errorf("index 2^31: %v", err)
	}
	for _, gap := range []int{0, -1, utxo.MaxGapLimit + 1} {
		if err := utxo.CheckGapLimit(gap); err == nil || !strings.Contains(err.Error(), "it must be 1 to 1000") {
			t.Errorf("gap limit %d: %v", gap, err)
		}
	}
	if err := utxo.CheckGapLimit(utxo.DefaultGapLimit); err != nil {
		t.Error(err)
	}
}

// TestDescriptorsAgainstLitecoind derives random descriptors of every
// kind from random tpubs and compares the addresses and checksums with
// litecoind's deriveaddresses and getdescriptorinfo (Bitcoin Core's
// descriptor code, Litecoin's regtest prefixes).
func TestDescriptorsAgainstLitecoind(t *testing.T) {
	node := testenv.NewLitecoind(t)
	ltc := network(t, "litecoin-regtest")
	rnd := testenv.Rand(t, 1)
	tpub := func() string {
		seed := make([]byte, 32)
		for i := range seed {
			seed[i] = byte(rnd.IntN(256))
		}
		m, err := hdkeychain.NewMaster(seed, ltc.Params)
		if err != nil {
			t.Fatal(err)
		}
		acct, err := m.Derive(hdkeychain.HardenedKeyStart + uint32(rnd.IntN(5)))
		if err != nil {
			t.Fatal(err)
		}
		pub, err := acct.Neuter()
		if err != nil {
			t.Fatal(err)
		}
		return pub.String()
	}
	kinds := []func() string{
		func() string { return fmt.Sprintf("pkh(%s/0/*)", tpub()) },
		func() string { return fmt.Sprintf("wpkh([deadbeef/84h/1h/0h]%s/1/*)", tpub()) },
		func() string { return fmt.Sprintf("sh(wpkh(%s/0/*))", tpub()) },
		func() string {
			return fmt.Sprintf("wsh(sortedmulti(2,%s/0/*,%s/0/*,%s/0/*))", tpub(), tpub(), tpub())
		},
	}
	ctx := context.Background()
	for round := 0; round < 12; round++ {
		desc := kinds[round%len(kinds)]()
		var info struct {
			Checksum string `json:"checksum"`
		}
		if err := node.Call(ctx, &info, "getdescriptorinfo", desc); err != nil {
			t.Fatal(err)
		}
		d, err := utxo.ParseDescriptor(ltc, desc+"#"+info.Checksum)
		if err != nil {
			t.Fatalf("%s#%s (litecoind's checksum): %v", desc, info.Checksum, err)
		}
		var want []string
		if err := node.Call(ctx, &want, "deriveaddresses", d.String, []int{0, 4}); err != nil {
			t.Fatal(err)
		}
		got, err := d.DeriveRange(0, 5)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i].String != want[i] {
				t.Errorf("%s: address %d = %s, litecoind's %s", d.String, i, got[i].String, want[i])
			}
		}
	}
}

// FuzzParseDescriptor: whatever ParseDescriptor accepts it accepts again
// in its canonical form, and derives its first address.
func FuzzParseDescriptor(f *testing.F) {
	const xpub = "xpub6BgBgsespWvERF3LHQu6CnqdvfEvtMcQjYrcRzx53QJjSxarj2afYWcLteoGVky7D3UKDP9QyrLprQ3VCECoY49yfdDEHGCtMMj92pReUsQ"
	for _, s := range []string{"wpkh(" + xpub + "/0/*)", "tr(" + xpub + "/1/*)", "sh(wpkh([deadbeef/49h]" + xpub + "/0/*))",
		"wsh(sortedmulti(2," + xpub + "/0/*," + xpub + "/1/*))", "pkh(" + xpub + ")#x", "raw(deadbeef)#89f8spxm"} {
		f.Add(s)
	}
	btc := network(f, "bitcoin")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := utxo.ParseDescriptor(btc, s)
		if err != nil {
			if !errors.Is(err, utxo.ErrInvalidDescriptor) {
				t.Fatalf("error %v does not wrap ErrInvalidDescriptor", err)
			}
			return
		}
		again, err := utxo.ParseDescriptor(btc, d.String)
		if err != nil || again.String != d.String {
			t.Fatalf("%q: canonical %q reads as %v, %v", s, d.String, again, err)
		}
		if _, err := d.Derive(0); err != nil {
			t.Fatalf("%s: address 0: %v", d.String, err)
		}
	})
}
