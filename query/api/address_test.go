package api

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
			got, err := parseAddress(c.in)
			if (err == nil) != c.ok || got != c.want {
				t.Fatalf("parseAddress(%q) = %q, %v; want %q, ok %v", c.in, got, err, c.want, c.ok)
			}
		})
	}
}

func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed", "", "0x", "0xé"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseAddress(s)
		if err != nil {
			return
		}
		if len(got) != 42 || got != strings.ToLower(got) {
			t.Fatalf("parseAddress(%q) = %q: not lowercase 0x+40", s, got)
		}
		if again, err := parseAddress(got); err != nil || again != got {
			t.Fatalf("lowercase form %q does not parse to itself: %q, %v", got, again, err)
		}
		if sum := "0x" + checksum(got[2:]); sum != got {
			if again, err := parseAddress(sum); err != nil || again != got {
				t.Fatalf("checksummed %q of %q: %q, %v", sum, got, again, err)
			}
		}
	})
}

func TestPageToken(t *testing.T) {
	c := tokenCodec{key: []byte("0123456789abcdef0123456789abcdef")}
	sc := scope(7, "ETH", "0xaa")
	cur := appendUvarint(appendUvarint(nil, 123456), 7)
	tok := c.encode(kindTransactions, sc, cur)
	if got, err := c.decode(kindTransactions, sc, tok); err != nil || string(got) != string(cur) {
		t.Fatalf("round trip = %x, %v", got, err)
	}
	flip := []byte(tok)
	flip[3] ^= 1
	for name, bad := range map[string]struct {
		kind  byte
		scope []byte
		tok   string
	}{
		"Forged":         {kindTransactions, sc, string(flip)},
		"Truncated":      {kindTransactions, sc, tok[:len(tok)-2]},
		"Empty":          {kindTransactions, sc, ""},
		"OtherAddress":   {kindTransactions, scope(7, "ETH", "0xbb"), tok},
		"OtherRequester": {kindTransactions, scope(8, "ETH", "0xaa"), tok},
		"OtherList":      {kindSubscriptions, sc, tok},
		"NotBase64":      {kindTransactions, sc, "!!!!" + tok},
		"Padded":         {kindTransactions, sc, tok + "="},
		"Huge":           {kindTransactions, sc, strings.Repeat("A", 10000)},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := c.decode(bad.kind, bad.scope, bad.tok); err == nil {
				t.Fatal("decode accepted it")
			}
		})
	}
	other := tokenCodec{key: []byte("another key, another server....")}
	if _, err := other.decode(kindTransactions, sc, tok); err == nil {
		t.Fatal("a token of another key was accepted")
	}
}

func FuzzPageToken(f *testing.F) {
	c := tokenCodec{key: []byte("0123456789abcdef0123456789abcdef")}
	sc := scope(7, "ETH", "0xaa")
	f.Add(c.encode(kindTransactions, sc, appendUvarint(appendUvarint(nil, 99), 3)))
	f.Add(c.encode(kindSubscriptions, sc, appendString(appendString(nil, "ETH"), "0xaa")))
	f.Add("")
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, tok string) {
		cur, err := c.decode(kindTransactions, sc, tok)
		if err != nil {
			return
		}
		// Only tokens this codec minted decode; they read as a cursor or fail cleanly.
		if c.encode(kindTransactions, sc, cur) != tok {
			t.Fatalf("decoded %q but it re-encodes differently", tok)
		}
		rd := reader{b: cur}
		rd.uvarint()
		rd.uvarint()
		_ = rd.done()
	})
}

func TestReader(t *testing.T) {
	for name, b := range map[string][]byte{
		"Empty":        nil,
		"OverlongVar":  {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"StringTooBig": appendUvarint(nil, 1<<40),
		"Trailing":     append(appendString(appendString(nil, "a"), "b"), 0),
	} {
		t.Run(name, func(t *testing.T) {
			rd := reader{b: b}
			rd.string()
			rd.string()
			if rd.done() == nil {
				t.Fatal("accepted")
			}
		})
	}
}
