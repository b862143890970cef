package evm

// Why a call reverted: the revert data of Solidity's Error(string) and
// Panic(uint256), decoded.

import (
	"bytes"
	"fmt"
	"math/big"
	"unicode/utf8"

	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/wharfhq/wharf/query"
)

// Selectors of the revert data Solidity writes.
var (
	selError = []byte{0x08, 0xc3, 0x79, 0xa0} // Error(string)
	selPanic = []byte{0x4e, 0x48, 0x7b, 0x71} // Panic(uint256)
)

// panicCodes are the meanings of Solidity's panic codes.
var panicCodes = map[uint64]string{
	0x00: "generic compiler panic",
	0x01: "assertion failed",
	0x11: "arithmetic underflow or overflow",
	0x12: "division or modulo by zero",
	0x21: "invalid enum value",
	0x22: "invalid storage byte array encoding",
	0x31: "pop on an empty array",
	0x32: "array index out of bounds",
	0x41: "out of memory",
	0x51: "call to an uninitialized function",
}

// RevertReason says why a call failed, from the EVM's error (errText,
// such as "execution reverted" or "out of gas") and the revert data
// (output): the message of an Error(string); "Panic(0x11): arithmetic
// underflow or overflow" for a Panic(uint256); the data in 0x-hex when
// it is neither; errText when there is no data. The contract and the
// node choose its bytes: it is query.ChainText of at most
// query.MaxReason characters.
func RevertReason(errText string, output []byte) string {
	return query.ChainText(revertReason(errText, output), query.MaxReason)
}

func revertReason(errText string, output []byte) string {
	switch {
	case len(output) == 0:
		return errText
	case bytes.HasPrefix(output, selError):
		if msg, ok := abiString(output[4:]); ok {
			return msg
		}
	case bytes.HasPrefix(output, selPanic) && len(output) == 36:
		code := new(big.Int).SetBytes(output[4:])
		if code.IsUint64() {
			if meaning, ok := panicCodes[code.Uint64()]; ok {
				return fmt.Sprintf("Panic(0x%x): %s", code.Uint64(), meaning)
			}
		}
		return fmt.Sprintf("Panic(0x%x)", code)
	}
	return hexutil.Encode(output)
}

// abiString decodes an ABI-encoded string argument; false when b does
// not hold one, or it is not UTF-8.
func abiString(b []byte) (string, bool) {
	s, ok := abiBytes(b)
	if !ok || !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
}

// abiBytes decodes an ABI-encoded bytes or string argument; false when b
// does not hold one: an offset or a length that points outside b.
func abiBytes(b []byte) ([]byte, bool) {
	if len(b) < 64 {
		return nil, false
	}
	off := new(big.Int).SetBytes(b[:32])
	if !off.IsUint64() || off.Uint64() > uint64(len(b))-32 {
		return nil, false
	}
	o := off.Uint64()
	n := new(big.Int).SetBytes(b[o : o+32])
	if !n.IsUint64() || n.Uint64() > uint64(len(b))-o-32 {
		return nil, false
	}
	return b[o+32 : o+32+n.Uint64()], true
}
