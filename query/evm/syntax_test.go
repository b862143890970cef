package evm

import (
	"strings"
	"testing"
)

func TestParseAddress(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
		ok             bool
	}{
		// The test vectors of EIP-55.
		{"EIP55a", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed", true},
		{"EIP55b", "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359", "0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359", true},
		{"EIP55c", "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB", "0xdbf03b407c01e7cd3cbea99509d93f8dddc8c6fb", true},
		{"EIP55d", "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb", "0xd1220a0cf47c7b9be7a2e6ba89f429762e7b9adb", true},
		{"Lowercase", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed", true},
		{"Uppercase", "0x5AAEB6053F3E94C9B9A09F33669435E7EF1BEAED", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed", true},
		{"Digits", "0x0000000000000000000000000000000000000000", "0x0000000000000000000000000000000000000000", true},
		{"BadChecksum", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD", "", false},
		{"UpperPrefix", "0X5aaeb6053f3e94c9b9a09f33669435e7ef1beaed", "", false},
		{"NoPrefix", "5aaeb6053f3e94c9b9a09f33669435e7ef1beaed00", "", false},
		{"Short", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1bea", "", false},
		{"Long", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed00", "", false},
		{"NotHex", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaeg", "", false},
		{"SQL", "0x' OR '1'='1' --                       ", "", false},
		{"Unicode", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaé", "", false},
		{"Empty", "", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := (Syntax{}).ParseAddress(c.in)
			if (err == nil) != c.ok || got != c.want {
				t.Fatalf("ParseAddress(%q) = %q, %v; want %q, ok %v", c.in, got, err, c.want, c.ok)
			}
		})
	}
}

func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed", "", "0x", "0xé"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := (Syntax{}).ParseAddress(s)
		if err != nil {
			return
		}
		if len(got) != 42 || got != strings.ToLower(got) {
			t.Fatalf("ParseAddress(%q) = %q: not lowercase 0x+40", s, got)
		}
		if again, err := (Syntax{}).ParseAddress(got); err != nil || again != got {
			t.Fatalf("lowercase form %q does not parse to itself: %q, %v", got, again, err)
		}
		if sum := "0x" + checksum(got[2:]); sum != got {
			if again, err := (Syntax{}).ParseAddress(sum); err != nil || again != got {
				t.Fatalf("checksummed %q of %q: %q, %v", sum, got, again, err)
			}
		}
	})
}

func TestParseTxHash(t *testing.T) {
	const low = "0x88df016429689c079f3b2f6ad39fa052532c56795b733da78a91ebe6a713944b"
	for _, c := range []struct {
		name, in, want string
	}{
		{"Lowercase", low, low},
		{"Mixed", "0x88DF016429689c079f3b2f6ad39fa052532c56795b733da78a91ebe6a713944B", low},
		{"NoPrefix", low[2:] + "00", ""},
		{"Short", low[:65], ""},
		{"NotHex", low[:65] + "g", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := (Syntax{}).ParseTxHash(c.in)
			if (err == nil) != (c.want != "") || got != c.want {
				t.Fatalf("ParseTxHash(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
		})
	}
}
