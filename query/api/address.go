package api

import (
	"encoding/hex"
	"strings"

	"golang.org/x/crypto/sha3"
)

// parseAddress validates an Ethereum address and returns it in lowercase
// (AIP-122). All-lowercase and all-uppercase hex are accepted as they are;
// mixed case must carry a valid EIP-55 checksum.
func parseAddress(s string) (string, error) {
	if len(s) != 42 || s[:2] != "0x" {
		return "", errorf(codeInvalidArgument, "malformed address %s: want 0x and 40 hex digits", quote(s))
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
			return "", errorf(codeInvalidArgument, "malformed address %s: want 0x and 40 hex digits", quote(s))
		}
	}
	low := strings.ToLower(hexPart)
	if lower && upper && checksum(low) != hexPart {
		return "", errorf(codeInvalidArgument, "address %s fails its EIP-55 checksum (mixed case must be checksummed; or write it all in lowercase)", quote(s))
	}
	return "0x" + low, nil
}

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

// parseHash validates a transaction hash (0x and 64 hex digits, any case)
// and returns it in lowercase.
func parseHash(s string) (string, error) {
	if len(s) != 66 || s[:2] != "0x" {
		return "", errorf(codeInvalidArgument, "malformed transaction hash %s: want 0x and 64 hex digits", quote(s))
	}
	if _, err := hex.DecodeString(s[2:]); err != nil {
		return "", errorf(codeInvalidArgument, "malformed transaction hash %s: want 0x and 64 hex digits", quote(s))
	}
	return strings.ToLower(s), nil
}

// quote quotes user input for a message, cut to a readable length.
func quote(s string) string {
	const n = 80
	if len(s) > n {
		return "'" + strings.ToValidUTF8(s[:n], "") + "…'"
	}
	return "'" + strings.ToValidUTF8(s, "\uFFFD") + "'"
}
