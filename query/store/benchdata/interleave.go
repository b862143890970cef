package benchdata

import (
	"slices"
	"time"
)

// Interleaved times a and b alternately while more says so (b.Loop, or
// a count), so that the load of a shared machine falls on both alike,
// and returns the median time of each: the depth benchmarks' first page
// and page at depth.
func Interleaved(more func() bool, a, b func()) (ma, mb time.Duration) {
	var as, bs []time.Duration
	for more() {
		t := time.Now()
		a()
		as = append(as, time.Since(t))
		t = time.Now()
		b()
		bs = append(bs, time.Since(t))
	}
	return Median(as), Median(bs)
}

// Times is a more for Interleaved that says yes n times.
func Times(n int) func() bool {
	return func() bool {
		n--
		return n >= 0
	}
}

// Median is the middle of ds (0 for none); ds is not changed.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
