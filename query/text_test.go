package query_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wharfhq/wharf/query"
)

func TestChainText(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"plain", "USDC", 32, "USDC"},
		{"unicode kept", "Ünïcødé 🚀", 32, "Ünïcødé 🚀"},
		{"NUL", "US\x00DC\x00", 32, "USDC"},
		{"controls", "a\tb\nc\rd\x1be\x7ff\u0085g", 32, "abcdefg"},
		{"invalid UTF-8", "a\xffb\xc3", 32, "a\ufffdb\ufffd"},
		{"bidi", "\u202egnp.exe\u202c \u2066x\u2069", 32, "gnp.exe x"},
		{"cut in characters", strings.Repeat("é", 40), 32, strings.Repeat("é", 32)},
		{"no cut", strings.Repeat("x", 100), 0, strings.Repeat("x", 100)},
		{"formula kept as text", "=HYPERLINK(\"x\")", 32, "=HYPERLINK(\"x\")"},
		{"only junk", "\x00\x01\u202e", 32, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := query.ChainText(tc.in, tc.max)
			if got != tc.want {
				t.Errorf("ChainText(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
			if !query.IsChainText(got, tc.max) {
				t.Errorf("IsChainText(%q) false for ChainText's answer", got)
			}
			if query.IsChainText(tc.in, tc.max) != (tc.in == tc.want) {
				t.Errorf("IsChainText(%q) = %v", tc.in, !(tc.in == tc.want))
			}
		})
	}
}

// FuzzChainText: whatever comes in, ChainText's answer is valid UTF-8,
// has no control byte, at most max characters, and is its own answer.
func FuzzChainText(f *testing.F) {
	for _, s := range []string{"", "USDC", "\x00", "\xff\xfe", "\u202e", strings.Repeat("é", 50)} {
		f.Add(s, 32)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		max = max%200 + 1
		if max < 1 {
			max = -max + 1
		}
		got := query.ChainText(s, max)
		if !utf8.ValidString(got) || utf8.RuneCountInString(got) > max {
			t.Fatalf("ChainText(%q, %d) = %q: invalid or too long", s, max, got)
		}
		for i := 0; i < len(got); i++ {
			if got[i] < 0x20 || got[i] == 0x7f {
				t.Fatalf("ChainText(%q, %d) = %q: control byte", s, max, got)
			}
		}
		if again := query.ChainText(got, max); again != got {
			t.Fatalf("ChainText not idempotent: %q then %q", got, again)
		}
	})
}
