package testenv

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// Seed returns the seed of a generated test: WHARF_TEST_SEED when it is
// set (to run a failure again), else a new one. It is logged when t
// fails, with the line that reruns it.
func Seed(t testing.TB) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("WHARF_TEST_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("WHARF_TEST_SEED=%q: not a seed", s)
		}
		seed = n
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d (WHARF_TEST_SEED=%d runs it again)", seed, seed)
		}
	})
	return seed
}

// Rand is a generator for a generated test, seeded by Seed (so logged on
// failure and set again by WHARF_TEST_SEED), on its own stream.
func Rand(t testing.TB, stream uint64) *rand.Rand {
	t.Helper()
	return rand.New(rand.NewPCG(Seed(t), stream))
}
