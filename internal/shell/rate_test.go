package shell_test

import (
	"testing"

	"github.com/wharfhq/wharf/internal/shell"
)

func TestParseRate(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want shell.Rate
	}{
		{"0", shell.Rate{}},
		{"", shell.Rate{}},
		{"100/s", shell.Rate{PerSecond: 100, Burst: 100}},
		{"60/m", shell.Rate{PerSecond: 1, Burst: 60}},
		{"3600/h", shell.Rate{PerSecond: 1, Burst: 3600}},
		{"1/s", shell.Rate{PerSecond: 1, Burst: 1}},
		// wharf's old form: R per second, bursts of 2R+1.
		{"10", shell.Rate{PerSecond: 10, Burst: 21}},
		{"50", shell.Rate{PerSecond: 50, Burst: 101}},
		{"0.5", shell.Rate{PerSecond: 0.5, Burst: 2}},
		{"0.0", shell.Rate{}},
	} {
		got, err := shell.ParseRate(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseRate(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseRateErrors(t *testing.T) {
	for _, in := range []string{"100/d", "0/s", "-1/s", "1.5/s", "/s", "x", "-3", "NaN", "Inf", "1e99", "10/", "s/10", "100/S"} {
		if got, err := shell.ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) = %+v, want an error", in, got)
		}
	}
}

// FuzzParseRate: any accepted value is a usable limit (a positive rate
// with a burst of at least 1, or none), and the N/unit form round-trips.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"0", "100/s", "60/m", "3600/h", "10", "0.5", "100/d", "1e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := shell.ParseRate(s)
		if err != nil {
			return
		}
		if r == (shell.Rate{}) {
			return
		}
		if !(r.PerSecond > 0) || r.Burst < 1 {
			t.Fatalf("ParseRate(%q) = %+v: not a usable limit", s, r)
		}
	})
}
