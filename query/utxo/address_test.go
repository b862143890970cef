package utxo_test

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/txscript/v2"

	"github.com/wharfhq/wharf/query/utxo"
)

func network(t testing.TB, name string) *utxo.Network {
	t.Helper()
	n, err := utxo.NetworkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestParseAddress(t *testing.T) {
	tests := []struct {
		name, network, in string
		canonical, typ    string
		script            string
	}{
		// BIP 173 and BIP 350 test vectors.
		{"P2WPKH upper case", "bitcoin", "BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4",
			"bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", utxo.P2WPKH, "0014751e76e8199196d454941c45d1b3a323f1433bd6"},
		{"P2WSH testnet", "bitcoin-testnet3", "tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7",
			"tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7", utxo.P2WSH, "00201863143c14c5166804bd19203356da136c985678cd4d27a1b8c6329604903262"},
		{"P2TR", "bitcoin", "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0",
			"bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0", utxo.P2TR, "512079be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798"},
		{"P2TR signet", "bitcoin-signet", "tb1pqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesf3hn0c",
			"tb1pqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesf3hn0c", utxo.P2TR, "5120000000c4a5cad46221b2a187905e5266362b99d5e91c6ce24d165dab93e86433"},
		// The genesis block's coinbase key, as a P2PKH address.
		{"P2PKH", "bitcoin", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa",
			"1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", utxo.P2PKH, "76a91462e907b15cbf27d5425399ebf6f0fb50ebb88f1888ac"},
		{"P2SH", "bitcoin", "3P14159f73E4gFr7JterCCQh9QjiTjiZrG",
			"3P14159f73E4gFr7JterCCQh9QjiTjiZrG", utxo.P2SH, "a914e9c3dd0c07aac76179ebc76a6c78d4d67c6c160a87"},
		{"P2PKH regtest", "bitcoin-regtest", "mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn",
			"mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn", utxo.P2PKH, "76a914243f1394f44554f4ce3fd68649c19adc483ce92488ac"},
		{"P2WPKH regtest", "bitcoin-regtest", "bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080",
			"bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080", utxo.P2WPKH, "0014751e76e8199196d454941c45d1b3a323f1433bd6"},
		{"P2WPKH litecoin", "litecoin", "ltc1qw508d6qejxtdg4y5r3zarvary0c5xw7kgmn4n9",
			"ltc1qw508d6qejxtdg4y5r3zarvary0c5xw7kgmn4n9", utxo.P2WPKH, "0014751e76e8199196d454941c45d1b3a323f1433bd6"},
		{"P2WPKH litecoin regtest", "litecoin-regtest", "rltc1qw508d6qejxtdg4y5r3zarvary0c5xw7k693xs3",
			"rltc1qw508d6qejxtdg4y5r3zarvary0c5xw7k693xs3", utxo.P2WPKH, "0014751e76e8199196d454941c45d1b3a323f1433bd6"},
		// Litecoin still reads P2SH with Bitcoin's version byte 5 and
		// writes it with its own, 0x32 ("M"): litecoind's validateaddress
		// says the same of this one.
		{"P2SH litecoin legacy", "litecoin", "3P14159f73E4gFr7JterCCQh9QjiTjiZrG",
			"MVDCJxZd4A5VUm81QmeC1qf6U7LASsr7LT", utxo.P2SH, "a914e9c3dd0c07aac76179ebc76a6c78d4d67c6c160a87"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := utxo.ParseAddress(network(t, tt.network), tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got.String != tt.canonical || got.Type != tt.typ || hex.EncodeToString(got.Script) != tt.script {
				t.Errorf("got %s %s %x, want %s %s %s", got.String, got.Type, got.Script, tt.canonical, tt.typ, tt.script)
			}
			again, err := utxo.ParseAddress(network(t, tt.network), got.String)
			if err != nil || again.String != got.String {
				t.Errorf("canonical form %s reads as %v, %v", got.String, again.String, err)
			}
		})
	}
}

func TestParseAddressRefused(t *testing.T) {
	tests := []struct {
		name, network, in, rule string
	}{
		{"Empty", "bitcoin", "", "empty"},
		{"Space", "bitcoin", " 1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "printable ASCII without spaces"},
		{"TooLong", "bitcoin", "bc1" + strings.Repeat("q", 90), "longer than 90"},
		{"MixedCase", "bitcoin-testnet3", "tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sL5k7", "mixed-case bech32"},
		{"WrongNetworkBech32", "bitcoin", "tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7",
			"an address of bitcoin-testnet3/bitcoin-testnet4/bitcoin-signet (prefix tb1), this chain is bitcoin (prefix bc1)"},
		{"WrongNetworkLitecoin", "bitcoin-regtest", "rltc1qw508d6qejxtdg4y5r3zarvary0c5xw7k693xs3",
			"an address of litecoin-regtest (prefix rltc1), this chain is bitcoin-regtest (prefix bcrt1)"},
		{"WrongNetworkBase58", "bitcoin-regtest", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "an address of bitcoin (version byte 0x00)"},
		{"BadChecksumBech32", "bitcoin", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5", "not valid bech32"},
		{"BadChecksumBase58", "bitcoin", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNb", "base58check checksum mismatch"},
		{"V1WithBech32", "bitcoin", "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqh2y7hd", "witness v1 must use the bech32m checksum"},
		{"V0WithBech32m", "bitcoin", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kemeawh", "witness v0 must use the bech32 checksum"},
		{"V16", "bitcoin", "BC1SW50QGDZ25J", "witness v16 program of 2 bytes: no address type here"},
		{"UnknownHRP", "bitcoin", "tc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq5zuyut", "neither bech32 of a known network nor base58check"},
		{"Hex", "bitcoin", "0x751e76e8199196d454941c45d1b3a323f1433bd6", "neither bech32 of a known network nor base58check"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := utxo.ParseAddress(network(t, tt.network), tt.in)
			if err == nil {
				t.Fatalf("accepted as %+v", got)
			}
			if !errors.Is(err, utxo.ErrInvalidAddress) || !strings.Contains(err.Error(), tt.rule) {
				t.Errorf("error %q, want one naming %q and wrapping ErrInvalidAddress", err, tt.rule)
			}
		})
	}
}

func TestNetworkIdentity(t *testing.T) {
	tests := []struct{ network, id string }{
		{"bitcoin", "bip122:000000000019d6689c085ae165831e93"},
		{"bitcoin-testnet3", "bip122:000000000933ea01ad0ee984209779ba"},
		{"bitcoin-regtest", "bip122:0f9188f13cb7b2c71f2a335e3a4fc328"},
		{"litecoin", "bip122:12a765e31ffd4059bada1e25190f6e98"},
	}
	for _, tt := range tests {
		n := network(t, tt.network)
		if got := n.ID(); got != tt.id {
			t.Errorf("%s: ID %s, want %s", tt.network, got, tt.id)
		}
		byGenesis, err := utxo.NetworkByGenesis(strings.ToUpper(n.Genesis))
		if err != nil || byGenesis.Name != n.Name {
			t.Errorf("NetworkByGenesis(%s) = %v, %v", n.Genesis, byGenesis, err)
		}
	}
	if _, err := utxo.NetworkByGenesis(strings.Repeat("ab", 32)); err == nil {
		t.Error("an unknown genesis block was taken")
	}
}

func TestParseTxID(t *testing.T) {
	const id = "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b"
	if got, err := utxo.ParseTxID(strings.ToUpper(id)); err != nil || got != id {
		t.Errorf("ParseTxID(upper) = %q, %v", got, err)
	}
	for _, bad := range []string{"", "0x" + id[2:], id[1:], id + "0", "g" + id[1:]} {
		if _, err := utxo.ParseTxID(bad); !errors.Is(err, utxo.ErrInvalidTxID) {
			t.Errorf("ParseTxID(%q) = %v, want ErrInvalidTxID", bad, err)
		}
	}
	op, err := utxo.ParseOutpoint(id + ":7")
	if err != nil || op.TxID != id || op.Vout != 7 || op.String() != id+":7" {
		t.Errorf("ParseOutpoint = %+v, %v", op, err)
	}
	for _, bad := range []string{id, id + ":", id + ":-1", id + ":01", id + ":4294967296"} {
		if _, err := utxo.ParseOutpoint(bad); !errors.Is(err, utxo.ErrInvalidTxID) {
			t.Errorf("ParseOutpoint(%q) = %v, want ErrInvalidTxID", bad, err)
		}
	}
}

// FuzzParseAddress holds ParseAddress to btcd's own decoder on Bitcoin's
// networks: what one reads the other reads with the same script, and a
// canonical form reads back as itself.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{
		"BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4", "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0",
		"1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "3P14159f73E4gFr7JterCCQh9QjiTjiZrG",
		"tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7", "bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080",
		"mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn", "rltc1qw508d6qejxtdg4y5r3zarvary0c5xw7k693xs3",
	} {
		f.Add(s)
	}
	nets := utxo.Networks()
	f.Fuzz(func(t *testing.T, s string) {
		for _, n := range nets {
			got, err := utxo.ParseAddress(n, s)
			if err != nil {
				if !errors.Is(err, utxo.ErrInvalidAddress) {
					t.Fatalf("%s: error %v does not wrap ErrInvalidAddress", n, err)
				}
				continue
			}
			again, err := utxo.ParseAddress(n, got.String)
			if err != nil || again.String != got.String || string(again.Script) != string(got.Script) {
				t.Fatalf("%s: %q reads as %q, whose canonical form reads as %+v, %v", n, s, got.String, again, err)
			}
			if back, err := utxo.AddressFromScript(n, got.Script); err != nil || back.String != got.String {
				t.Fatalf("%s: script %x of %q gives %q, %v", n, got.Script, s, back.String, err)
			}
			if n.Coin != "BTC" {
				continue
			}
			theirs, err := address.DecodeAddress(s, n.Params)
			if err != nil {
				t.Fatalf("%s: %q read as %s, btcd refuses it: %v", n, s, got.String, err)
			}
			script, err := txscript.PayToAddrScript(theirs)
			if err != nil || string(script) != string(got.Script) {
				t.Fatalf("%s: %q: script %x, btcd's %x (%v)", n, s, got.Script, script, err)
			}
		}
	})
}
