package query

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"math/big"
	"strconv"
)

// ErrAmount is what parsing a text that is not an amount returns
// (wrapped with the text).
var ErrAmount = errors.New("not a decimal integer amount")

// maxAmountDigits bounds the digits ParseAmount accepts: far above a
// uint256 (78 digits) and any sum of them, low enough that a garbled
// value cannot cost more than a moment.
const maxAmountDigits = 1000

// Amount is an exact signed integer amount of an asset in its smallest
// unit (wei, a token's base unit). It is validated where it is made
// (ParseAmount, AmountFromBig), from the node adapter to the store, so
// that arithmetic on it cannot fail and no amount is ever skipped for
// failing to parse. The zero value is 0. Amounts are values: == compares
// them, and they are safe to copy and share.
//
// Its text (String, JSON, SQL) is the canonical decimal: an optional
// minus sign, no leading zeros, no "+", no "-0".
type Amount struct {
	s string // canonical decimal; "" for zero, so that == is equality
}

// ParseAmount parses a canonical decimal integer (see Amount). Errors:
// ErrAmount, wrapped with the text.
func ParseAmount(s string) (Amount, error) {
	if !canonical(s) {
		q := s
		if len(q) > 80 {
			q = q[:80] + "…"
		}
		return Amount{}, fmt.Errorf("%s: %w", strconv.Quote(q), ErrAmount)
	}
	if s == "0" {
		return Amount{}, nil
	}
	return Amount{s: s}, nil
}

// MustParseAmount is ParseAmount for constants: it panics on an error.
func MustParseAmount(s string) Amount {
	a, err := ParseAmount(s)
	if err != nil {
		panic("query.MustParseAmount: " + err.Error())
	}
	return a
}

// canonical reports whether s is -?(0|[1-9][0-9]*), not "-0", of at most
// maxAmountDigits digits.
func canonical(s string) bool {
	d := s
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
		if d == "0" {
			return false
		}
	}
	if len(d) == 0 || len(d) > maxAmountDigits || (d[0] == '0' && len(d) > 1) {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// AmountFromBig returns the amount x (nil is 0). x is not retained.
func AmountFromBig(x *big.Int) Amount {
	if x == nil || x.Sign() == 0 {
		return Amount{}
	}
	return Amount{s: x.String()}
}

// AmountOf returns the amount n.
func AmountOf(n int64) Amount {
	if n == 0 {
		return Amount{}
	}
	return Amount{s: strconv.FormatInt(n, 10)}
}

// String returns the canonical decimal.
func (a Amount) String() string {
	if a.s == "" {
		return "0"
	}
	return a.s
}

// Big returns the amount as a new big.Int, the caller's to change.
func (a Amount) Big() *big.Int {
	x := new(big.Int)
	if a.s != "" {
		x.SetString(a.s, 10) // canonical by construction
	}
	return x
}

// Sign returns -1, 0 or +1.
func (a Amount) Sign() int {
	switch {
	case a.s == "":
		return 0
	case a.s[0] == '-':
		return -1
	}
	return 1
}

// IsZero reports whether the amount is 0.
func (a Amount) IsZero() bool { return a.s == "" }

// Neg returns −a.
func (a Amount) Neg() Amount {
	switch a.Sign() {
	case 0:
		return a
	case -1:
		return Amount{s: a.s[1:]}
	}
	return Amount{s: "-" + a.s}
}

// Add returns a + b.
func (a Amount) Add(b Amount) Amount {
	switch {
	case b.s == "":
		return a
	case a.s == "":
		return b
	}
	x := a.Big()
	return AmountFromBig(x.Add(x, b.Big()))
}

// Sub returns a − b.
func (a Amount) Sub(b Amount) Amount { return a.Add(b.Neg()) }

// Cmp compares a and b: -1 when a < b, 0 when equal, +1 when a > b.
func (a Amount) Cmp(b Amount) int {
	if a == b {
		return 0
	}
	return a.Big().Cmp(b.Big())
}

// MarshalText returns the canonical decimal; JSON writes it as a string.
func (a Amount) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText parses a canonical decimal (ParseAmount).
func (a *Amount) UnmarshalText(b []byte) error {
	v, err := ParseAmount(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// Value stores the amount as its canonical decimal text (a TEXT column
// in SQLite, NUMERIC in PostgreSQL).
func (a Amount) Value() (driver.Value, error) { return a.String(), nil }

// Scan reads an amount stored by Value; NULL is an error (a nullable
// column scans into a *Amount).
func (a *Amount) Scan(src any) error {
	switch v := src.(type) {
	case string:
		return a.UnmarshalText([]byte(v))
	case []byte:
		return a.UnmarshalText(v)
	case int64:
		*a = AmountOf(v)
		return nil
	case nil:
		return fmt.Errorf("amount is NULL: %w", ErrAmount)
	}
	return fmt.Errorf("amount of type %T: %w", src, ErrAmount)
}
