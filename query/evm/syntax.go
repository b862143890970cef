package evm

import (
	"encoding/hex"
	"strings"

	"golang.org/x/crypto/sha3"

	"github.com/wharfhq/wharf/query/chain"
)

// Syntax is the EVM's spelling of addresses and transaction hashes: 0x
// and hex, the canonical form in lower case.
type Syntax struct{}

var _ chain.Syntax = Syntax{}

// ZeroAddress is the EVM's address of no account, in canonical form: the
// address a test event names when its webhook's filter names none.
const ZeroAddress = "0x0000000000000000000000000000000000000000"

// ParseAddress validates an address and returns it in lower case.
// All-lowercase and all-uppercase hex are accepted as they are; mixed
// case must carry a valid EIP-55 checksum.
func (Syntax) ParseAddress(s string) (string, error) {
	if len(s) != 42 || s[:2] != "0x" {
		return "", &syntaxError{"malformed address " + chain.Quote(s) + ": want 0x and 40 hex digits"}
	}
	hexPart := s[2:]
	var lower, upper bool
	for i := 0; i < len(hexPart); i++ {
		switch c := hexPart[i]; {
		case c >= '0' && c <= '9':
		case c >= 'a' && c <= 'f':
			lower = true
		case c >= 'A' && c <= 'F':
			upper = true
		default:
			return "", &syntaxError{"malformed address " + chain.Quote(s) + ": want 0x and 40 hex digits"}
		}
	}
	low := strings.ToLower(hexPart)
	if lower && upper && checksum(low) != hexPart {
		return "", &syntaxError{"address " + chain.Quote(s) + " fails its EIP-55 checksum (mixed case must be checksummed; or write it all in lowercase)"}
	}
	return "0x" + low, nil
}

// ParseTxHash validates a transaction hash (0x and 64 hex digits, any
// case) and returns it in lower case.
func (Syntax) ParseTxHash(s string) (string, error) {
	if len(s) != 66 || s[:2] != "0x" {
		return "", &syntaxError{"malformed transaction hash " + chain.Quote(s) + ": want 0x and 64 hex digits"}
	}
	if _, err := hex.DecodeString(s[2:]); err != nil {
		return "", &syntaxError{"malformed transaction hash " + chain.Quote(s) + ": want 0x and 64 hex digits"}
	}
	return strings.ToLower(s), nil
}

// syntaxError is what Syntax refuses, said for the user who wrote it.
type syntaxError struct{ msg string }

func (e *syntaxError) Error() string { return e.msg }

// checksum returns the EIP-55 spelling of 40 lowercase hex digits: a
// letter is uppercase when the matching nibble of Keccak-256 of the
// lowercase text is 8 or more.
func checksum(low string) string {
	h := sha3.NewLegacyKeccak256()
	h.Write([]byte(low))
	sum := h.Sum(nil)
	out := []byte(low)
	for i, c := range out {
		nibble := sum[i/2]
		if i%2 == 0 {
			nibble >>= 4
		}
		if c >= 'a' && nibble&0xf >= 8 {
			out[i] = c - 'a' + 'A'
		}
	}
	return string(out)
}
