package utxo_test

import (
	"errors"
	"testing"

	"github.com/wharfhq/wharf/query/utxo"
)

func TestSyntax(t *testing.T) {
	s := utxo.Syntax{Network: network(t, "bitcoin")}
	for _, c := range []struct {
		name, in, want string
	}{
		{"Bech32Lowered", "BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"},
		{"Base58KeepsCase", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, err := s.ParseAddress(c.in); err != nil || got != c.want {
				t.Fatalf("ParseAddress(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
		})
	}
	t.Run("OtherNetwork", func(t *testing.T) {
		if _, err := s.ParseAddress("tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx"); !errors.Is(err, utxo.ErrInvalidAddress) {
			t.Fatalf("a testnet address on bitcoin: %v, want ErrInvalidAddress", err)
		}
	})
	t.Run("TxID", func(t *testing.T) {
		const id = "4A5E1E4BAAB89F3A32518A88C31BC87F618F76673E2CC77AB2127B7AFDEDA33B"
		got, err := s.ParseTxHash(id)
		if want := "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b"; err != nil || got != want {
			t.Fatalf("ParseTxHash = %q, %v; want %q", got, err, want)
		}
		if _, err := s.ParseTxHash("0x" + id[2:]); !errors.Is(err, utxo.ErrInvalidTxID) {
			t.Fatalf("0x id: %v, want ErrInvalidTxID", err)
		}
	})
}
