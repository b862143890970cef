package api_test

import (
	"encoding/csv"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/api"
)

// TestExportRecord: a generated statement row, with a symbol of commas,
// quotes, line breaks and formula starts, written by the export's
// hand-made CSV, reads back with encoding/csv as its 17 fields: the
// symbol as it is (after a ' when it starts like a formula) and the
// decimal columns exactly base units ÷ 10^decimals. The seed is printed
// on failure.
func TestExportRecord(t *testing.T) {
	rng := testenv.Rand(t, 24)
	pieces := []string{"A", "b", ",", `"`, "\n", "\r\n", " ", "=", "+", "-", "@", "\t", "é", "1"}
	for i := range 2000 {
		var sym strings.Builder
		for range rng.IntN(6) {
			sym.WriteString(pieces[rng.IntN(len(pieces))])
		}
		digits := strconv.FormatUint(rng.Uint64()>>rng.IntN(64), 10)
		if rng.IntN(2) == 0 {
			digits += strconv.FormatUint(rng.Uint64(), 10)
		}
		amount := query.MustParseAmount(strings.TrimLeft(digits, "0") + "0")
		if rng.IntN(2) == 0 {
			amount = amount.Neg()
		}
		c := query.BalanceChange{Block: uint64(i), Time: time.Unix(1_700_000_000+int64(i), 0), Contract: "0xc", Amount: amount,
			BalanceAfter: amount.Neg(), Checked: i%3 != 0, Reconciled: i%2 == 0,
			Causes: []query.Cause{{Kind: "fee", TxHash: "0xh1", Amount: query.AmountOf(-5),
				Fee: &query.FeeParts{Execution: query.AmountOf(3), L1: query.AmountOf(1), Operator: query.AmountOf(1)}},
				{Kind: "fee", TxHash: "0xh2", Amount: query.AmountOf(-7)}, {Kind: "token", TxHash: "0xh1"}}}
		l := query.Label{Asset: "erc20", Symbol: sym.String(), Decimals: rng.IntN(30)}
		line := api.ExportRecord("ETH", "0xa", c, l)
		recs, err := csv.NewReader(strings.NewReader(line)).ReadAll()
		if err != nil || len(recs) != 1 || len(recs[0]) != 21 {
			t.Fatalf("%q reads as %q, %v", line, recs, err)
		}
		r := recs[0]
		wantSym := l.Symbol
		if wantSym != "" && strings.ContainsRune("=+-@\t\r", rune(wantSym[0])) {
			wantSym = "'" + wantSym
		}
		// encoding/csv reads \r\n inside a quoted field as \n.
		if r[7] != strings.ReplaceAll(wantSym, "\r\n", "\n") {
			t.Fatalf("symbol %q read back as %q from %q", l.Symbol, r[7], line)
		}
		scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(l.Decimals)), nil))
		for _, pair := range [][2]int{{9, 10}, {11, 12}} {
			base, _ := new(big.Rat).SetString(r[pair[0]])
			dec, ok := new(big.Rat).SetString(r[pair[1]])
			if !ok || dec.Cmp(new(big.Rat).Quo(base, scale)) != 0 || strings.HasSuffix(r[pair[1]], "0") && strings.Contains(r[pair[1]], ".") {
				t.Fatalf("%s with %d decimals written %s", r[pair[0]], l.Decimals, r[pair[1]])
			}
		}
		if r[13] != "fee token" || r[14] != "0xh1 0xh2" {
			t.Fatalf("kinds %q, hashes %q", r[13], r[14])
		}
		// The fees' parts, a fee without them counting as execution.
		if got := strings.Join(r[17:], ","); got != "10,0,1,1" {
			t.Fatalf("fee columns %q, want 10,0,1,1", got)
		}
	}
}
