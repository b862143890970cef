package evm

import (
	"bytes"
	"math/big"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ethereum/go-ethereum/common"

	"github.com/wharfhq/wharf/query"
)

// abiText is s as a contract returns a string: offset, length, bytes.
func abiText(s string) []byte {
	out := append(words(32, int64(len(s))), s...)
	return append(out, make([]byte, (32-len(s)%32)%32)...)
}

// TestDecodeSymbolHostile: whatever a token answers for symbol() or
// name(), the decoded string is valid UTF-8 without NUL or control
// characters, at most max characters: a NUL made the store write SQL that
// failed (and the chain stopped), an invalid bytes32 made the stored
// document unreadable, 100 KB were copied into every transfer.
func TestDecodeSymbolHostile(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		max  int
		want string
	}{
		{"string", abiText("USDC"), query.MaxSymbol, "USDC"},
		{"bytes32", common.RightPadBytes([]byte("MKR"), 32), query.MaxSymbol, "MKR"},
		{"NUL in a string", abiText("US\x00DC"), query.MaxSymbol, "USDC"},
		{"NUL in bytes32", common.RightPadBytes([]byte("M\x00KR"), 32), query.MaxSymbol, "MKR"},
		{"invalid UTF-8 in bytes32", common.RightPadBytes([]byte("M\xffKR"), 32), query.MaxSymbol, "M\ufffdKR"},
		{"invalid UTF-8 in a string", abiText("\xc3("), query.MaxSymbol, "\ufffd("},
		{"controls and bidi", abiText("a\r\nb\u202ec\x1b[31m"), query.MaxName, "abc[31m"},
		{"100 KB", abiText(strings.Repeat("A", 100_000)), query.MaxName, strings.Repeat("A", query.MaxName)},
		{"formula text kept", abiText("=1+2"), query.MaxSymbol, "=1+2"},
		{"length beyond the answer", append(words(32, 1000), "short"...), query.MaxSymbol, ""},
		{"length of 2^64-1", append(words(32), append(bytes.Repeat([]byte{0}, 24), bytes.Repeat([]byte{0xff}, 8)...)...), query.MaxSymbol, ""},
		{"offset beyond 2^256", append(bytes.Repeat([]byte{0xff}, 32), words(4)...), query.MaxSymbol, ""},
		{"nothing", nil, query.MaxSymbol, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decodeSymbol(tc.in, tc.max); got != tc.want {
				t.Errorf("decodeSymbol = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRevertReasonHostile: a revert reason is bounded and clean whatever
// the contract reverted with.
func TestRevertReasonHostile(t *testing.T) {
	errorString := func(s string) []byte { return append([]byte{0x08, 0xc3, 0x79, 0xa0}, abiText(s)...) }
	for _, tc := range []struct {
		name, errText string
		out           []byte
		want          string
	}{
		{"NUL", "execution reverted", errorString("no\x00pe"), "nope"},
		{"controls", "execution reverted", errorString("a\x00\x01\x02b\u202e"), "ab"},
		{"1 MB message", "execution reverted", errorString(strings.Repeat("x", 1<<20)), strings.Repeat("x", query.MaxReason)},
		{"1 MB of data", "execution reverted", bytes.Repeat([]byte{1}, 1<<20), "0x" + strings.Repeat("01", query.MaxReason/2-1)},
		{"node's error text", "out of gas\x00\n", nil, "out of gas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RevertReason(tc.errText, tc.out); got != tc.want {
				t.Errorf("RevertReason = %.80q (%d bytes), want %.80q", got, len(got), tc.want)
			}
		})
	}
}

// clean fails t unless s is what ChainText leaves alone, within max.
func clean(t *testing.T, s string, max int) {
	t.Helper()
	if !utf8.ValidString(s) || !query.IsChainText(s, max) {
		t.Fatalf("%q is not clean chain text of at most %d characters", s, max)
	}
}

// FuzzDecodeSymbol: decodeSymbol never panics on any answer and gives
// clean text within its bound.
func FuzzDecodeSymbol(f *testing.F) {
	f.Add(abiText("USDC"))
	f.Add(common.RightPadBytes([]byte("M\xffKR"), 32))
	f.Add(append(words(32), append(bytes.Repeat([]byte{0}, 24), bytes.Repeat([]byte{0xff}, 8)...)...))
	f.Add(append(words(0x20, 3), "\x00\x01\x02"...))
	f.Fuzz(func(t *testing.T, b []byte) {
		clean(t, decodeSymbol(b, query.MaxSymbol), query.MaxSymbol)
	})
}

// FuzzABIString: abiString never panics; what it accepts is UTF-8 that
// lies within b; RevertReason of any data is clean and bounded.
func FuzzABIString(f *testing.F) {
	f.Add(abiText("adversary says no"))
	f.Add(append(words(32), append(bytes.Repeat([]byte{0}, 24), bytes.Repeat([]byte{0xff}, 8)...)...))
	f.Add(append(bytes.Repeat([]byte{0xff}, 32), words(4)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, ok := abiString(b); ok && (!utf8.ValidString(s) || len(s) > len(b)) {
			t.Fatalf("abiString accepted %q of %d bytes", s, len(b))
		}
		clean(t, RevertReason("execution reverted", append([]byte{0x08, 0xc3, 0x79, 0xa0}, b...)), query.MaxReason)
		if n := new(big.Int).SetBytes(b); n.BitLen() > 0 {
			clean(t, RevertReason(string(b), nil), query.MaxReason)
		}
	})
}

// rpcErr is a JSON-RPC error as a node answers it.
type rpcErr string

func (e rpcErr) Error() string  { return string(e) }
func (e rpcErr) ErrorCode() int { return -32000 }

// TestNodeErrorText: a node's error message is data too: made text and
// cut to 200 characters before it reaches a log or /healthz.
func TestNodeErrorText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"execution reverted\x00\x1b[2J", "node error -32000: execution reverted[2J"},
		{strings.Repeat("é", 300), "node error -32000: " + strings.Repeat("é", 200) + "…"},
		{"\xff", "node error -32000: \ufffd"},
	} {
		if got := reason(rpcErr(tc.in), secrets{}); got != tc.want {
			t.Errorf("reason(%.40q) = %.80q, want %.80q", tc.in, got, tc.want)
		}
	}
}
