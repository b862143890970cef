package query_test

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/query"
)

func TestParseAmount(t *testing.T) {
	uint256 := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1)).String()
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"0", true}, {"1", true}, {"-1", true}, {"1000000000000000000", true}, {uint256, true}, {"-" + uint256, true},
		{strings.Repeat("9", 1000), true},
		{"", false}, {"-", false}, {"-0", false}, {"+1", false}, {"01", false}, {"00", false}, {"1.0", false},
		{"1e18", false}, {" 1", false}, {"1 ", false}, {"0x10", false}, {"--1", false}, {"١", false},
		{strings.Repeat("9", 1001), false},
	} {
		a, err := query.ParseAmount(c.in)
		switch {
		case c.ok && err != nil:
			t.Errorf("ParseAmount(%.20q) = %v, want %s", c.in, err, c.in)
		case c.ok && a.String() != c.in:
			t.Errorf("ParseAmount(%.20q).String() = %.20q", c.in, a.String())
		case !c.ok && !errors.Is(err, query.ErrAmount):
			t.Errorf("ParseAmount(%.20q) = %v, %v; want ErrAmount", c.in, a, err)
		}
	}
}

func TestAmountArithmetic(t *testing.T) {
	m := query.MustParseAmount
	for _, c := range []struct {
		a, b, sum, diff string
		cmp             int
	}{
		{"0", "0", "0", "0", 0},
		{"5", "0", "5", "5", 1},
		{"0", "5", "5", "-5", -1},
		{"5", "-5", "0", "10", 1},
		{"-7", "3", "-4", "-10", -1},
		{"115792089237316195423570985008687907853269984665640564039457584007913129639935", "1",
			"115792089237316195423570985008687907853269984665640564039457584007913129639936",
			"115792089237316195423570985008687907853269984665640564039457584007913129639934", 1},
	} {
		a, b := m(c.a), m(c.b)
		if got := a.Add(b); got != m(c.sum) {
			t.Errorf("%s + %s = %s, want %s", a, b, got, c.sum)
		}
		if got := a.Sub(b); got != m(c.diff) {
			t.Errorf("%s - %s = %s, want %s", a, b, got, c.diff)
		}
		if got := a.Cmp(b); got != c.cmp {
			t.Errorf("Cmp(%s, %s) = %d, want %d", a, b, got, c.cmp)
		}
		if got := a.Neg().Neg(); got != a {
			t.Errorf("-(-%s) = %s", a, got)
		}
	}
	var zero query.Amount
	if zero != query.AmountOf(0) || zero != m("0") || zero != m("5").Sub(m("5")) || zero.String() != "0" || !zero.IsZero() {
		t.Errorf("the zero value is not 0 in every way: %q", zero.String())
	}
	if got := query.AmountFromBig(big.NewInt(-42)); got != query.AmountOf(-42) || got.Sign() != -1 || got.Big().Int64() != -42 {
		t.Errorf("AmountFromBig(-42) = %s", got)
	}
}

func TestAmountEncodings(t *testing.T) {
	type doc struct {
		A query.Amount  `json:"a"`
		P *query.Amount `json:"p"`
	}
	b, err := json.Marshal(doc{A: query.AmountOf(-12)})
	if err != nil || string(b) != `{"a":"-12","p":null}` {
		t.Fatalf("json.Marshal = %s, %v", b, err)
	}
	for _, in := range []string{`{"a":12}`, `{"a":"1.5"}`, `{"a":"+1"}`, `{"a":""}`} {
		var d doc
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("json.Unmarshal(%s) = %v, want an error", in, d.A)
		}
	}
	var d doc
	if err := json.Unmarshal([]byte(`{"a":"-12","p":"7"}`), &d); err != nil || d.A != query.AmountOf(-12) || *d.P != query.AmountOf(7) {
		t.Errorf("json.Unmarshal = %+v, %v", d, err)
	}
	for _, c := range []struct {
		src  any
		want string
		ok   bool
	}{
		{"12", "12", true}, {[]byte("-3"), "-3", true}, {int64(9), "9", true},
		{nil, "", false}, {"1.0", "", false}, {[]byte("x"), "", false}, {1.5, "", false},
	} {
		var a query.Amount
		err := a.Scan(c.src)
		if (err == nil) != c.ok || (c.ok && a.String() != c.want) {
			t.Errorf("Scan(%#v) = %s, %v", c.src, a, err)
		}
		if c.ok {
			if v, err := a.Value(); err != nil || v != c.want {
				t.Errorf("Value() = %v, %v; want %s", v, err, c.want)
			}
		}
	}
}

// FuzzParseAmount holds ParseAmount to big.Int's reading of the
// canonical decimals, and every encoding to a round trip.
func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{"0", "-1", "123456789012345678901234567890", "+1", "01", "-0", "1e3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := query.ParseAmount(s)
		x, ok := new(big.Int).SetString(s, 10)
		canonical := ok && x.String() == s && len(strings.TrimPrefix(s, "-")) <= 1000
		if (err == nil) != canonical {
			t.Fatalf("ParseAmount(%q) = %v, %v; big.Int reads %v, %v", s, a, err, x, ok)
		}
		if err != nil {
			return
		}
		if a.String() != s || a.Big().Cmp(x) != 0 || a.Sign() != x.Sign() || a.Neg().Add(a) != (query.Amount{}) {
			t.Fatalf("ParseAmount(%q) = %s (sign %d)", s, a, a.Sign())
		}
		var back query.Amount
		if err := back.Scan([]byte(s)); err != nil || back != a {
			t.Fatalf("Scan(%q) = %s, %v", s, back, err)
		}
		b, _ := a.MarshalText()
		if err := back.UnmarshalText(b); err != nil || back != a {
			t.Fatalf("text round trip of %q = %s, %v", s, back, err)
		}
	})
}
