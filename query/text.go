package query

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The most characters (runes) kept of a string a chain returns. A
// contract answers symbol(), name() and its revert data with whatever it
// likes: a megabyte, NUL bytes, invalid UTF-8. What addrd stores, lists
// and exports of them is ChainText of at most these many characters.
const (
	MaxSymbol = 32
	MaxName   = 128
	// MaxReason bounds a revert reason, or an EVM error, a node reports.
	MaxReason = 2048
	// MaxCallType bounds a trace frame's type ("CALL", "DELEGATECALL" …).
	MaxCallType = 16
)

// ChainText makes s, a string from a node, safe to store and to show: invalid
// UTF-8 becomes U+FFFD, NUL and the other control characters (C0, DEL, C1)
// and the bidirectional overrides and isolates (U+202A–U+202E,
// U+2066–U+2069, which reorder what a terminal or a page shows) are
// dropped, and the rest is cut to at most max characters (no cut when
// max is 0 or less). A string already clean comes back as it is,
// unallocated.
func ChainText(s string, max int) string {
	if cleanText(s, max) {
		return s
	}
	var b strings.Builder
	n := 0
	for _, r := range s { // invalid bytes are read as U+FFFD
		if !keptRune(r) {
			continue
		}
		if max > 0 && n == max {
			break
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// IsChainText reports whether ChainText leaves s as it is.
func IsChainText(s string, max int) bool { return cleanText(s, max) }

func cleanText(s string, max int) bool {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 || !keptRune(r) {
				return false
			}
			i += size
		}
		if n++; max > 0 && n > max {
			return false
		}
	}
	return true
}

// keptRune reports whether r is shown as it is: not a control character
// nor a bidirectional override or isolate.
func keptRune(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return false
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return false
	}
	return true
}
