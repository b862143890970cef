package didyoumean_test

import (
	"testing"

	"github.com/wharfhq/wharf/internal/didyoumean"
	"github.com/wharfhq/wharf/internal/testenv"
)

func TestClosest(t *testing.T) {
	known := []string{"name", "kind", "executable", "access", "listen", "serve", "store"}
	tests := []struct{ s, want string }{
		{"acces", "access"},
		{"acess", "access"},
		{"ACCESS", "access"},
		{"lisen", "listen"},
		{"servee", "serve"},
		{"stroe", "store"},
		{"kinds", "kind"},
		{"platform", ""},
		{"x", ""},  // one edit is not fewer than half of one letter
		{"ab", ""}, // nor of two
		{"", ""},
	}
	for _, tt := range tests {
		if got := didyoumean.Closest(tt.s, known); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

// TestDistance holds Distance to its definition on generated strings:
// symmetric, zero only for equal strings, at most the longer length,
// and one edit away after one edit.
func TestDistance(t *testing.T) {
	r := testenv.Rand(t, 0)
	word := func() string {
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = "abc"[r.IntN(3)]
		}
		return string(b)
	}
	for range 2000 {
		a, b := word(), word()
		d := didyoumean.Distance(a, b)
		if d != didyoumean.Distance(b, a) || (d == 0) != (a == b) || d > max(len(a), len(b)) {
			t.Fatalf("Distance(%q, %q) = %d", a, b, d)
		}
		if len(a) > 0 {
			i := r.IntN(len(a))
			if e := a[:i] + a[i+1:]; didyoumean.Distance(a, e) != 1 {
				t.Fatalf("Distance(%q, %q) = %d after one deletion", a, e, didyoumean.Distance(a, e))
			}
		}
	}
}
