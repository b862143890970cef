package api

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
)

// digestFmt is digest as it was written with fmt: the model, so that
// tokens minted before and after are bound alike.
func digestFmt(r query.Range) []byte {
	text := func(r query.Range) string {
		t := func(t time.Time) int64 {
			if t.IsZero() {
				return 0
			}
			return t.UnixNano()
		}
		return fmt.Sprintf("%d %d %t %d %d %t %q %t %t %q %q", r.FromBlock, r.ToBlock, r.HasToBlock, t(r.FromTime), t(r.ToTime),
			r.Ascending, r.Contract, r.HasContract, r.TokensOnly, strings.Join(r.Kinds, ","), r.Counterparty)
	}
	c := text(r)
	if c == text(query.Range{}) {
		return nil
	}
	sum := sha256.Sum256([]byte(c))
	return sum[:digestSize]
}

// TestDigest: digest is the fmt-written model's for random ranges (each
// field present or not, times around the Unix epoch, strings with
// quotes and non-ASCII), and nil for the plain list only. The seed is
// printed on failure.
func TestDigest(t *testing.T) {
	rng := testenv.Rand(t, 24)
	strs := []string{"", "0x00000000000000000000000000000000000000c0", "0xc0/12345", `a"b\\c`, "日本\x00\xff"}
	times := []time.Time{{}, time.Unix(0, 0), time.Unix(1_700_000_000, 500), time.Unix(-5, 0)}
	if digest(query.Range{}) != nil {
		t.Fatal("the plain list has a digest")
	}
	for range 5000 {
		var r query.Range
		if rng.IntN(2) == 0 {
			r.FromBlock = rng.Uint64N(1 << uint(rng.IntN(64)))
		}
		if rng.IntN(2) == 0 {
			r.ToBlock, r.HasToBlock = rng.Uint64(), rng.IntN(2) == 0
		}
		r.FromTime, r.ToTime = times[rng.IntN(len(times))], times[rng.IntN(len(times))]
		r.Ascending, r.HasContract, r.TokensOnly = rng.IntN(2) == 0, rng.IntN(2) == 0, rng.IntN(4) == 0
		r.Contract, r.Counterparty = strs[rng.IntN(len(strs))], strs[rng.IntN(len(strs))]
		for range rng.IntN(3) {
			r.Kinds = append(r.Kinds, strs[rng.IntN(len(strs))])
		}
		if got, want := digest(r), digestFmt(r); !bytes.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("digest(%+v) = %x, want %x", r, got, want)
		}
	}
}
