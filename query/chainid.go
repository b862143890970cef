package query

import (
	"fmt"
	"strconv"
)

// A chain's identity is a CAIP-2 chain ID, "namespace:reference": the
// family's namespace ("eip155" for the EVM, "bip122" for Bitcoin and its
// kin) and the chain's reference in it (the EIP-155 chain ID, the first 32
// hex digits of the genesis block's hash). The store records it per chain
// name, /healthz and errors show it.

// EIP155 is the CAIP-2 chain ID of the EVM chain of EIP-155 chain ID id.
func EIP155(id uint64) string { return "eip155:" + strconv.FormatUint(id, 10) }

// ParseChainID splits a CAIP-2 chain ID into its namespace (3 to 8 of
// a-z, 0-9 and '-') and reference (1 to 32 of a-z, A-Z, 0-9, '-' and
// '_'); an error says what is wrong with it.
func ParseChainID(s string) (namespace, reference string, err error) {
	for i := 0; i < len(s); i++ {
		if s[i] != ':' {
			continue
		}
		namespace, reference = s[:i], s[i+1:]
		if len(namespace) < 3 || len(namespace) > 8 || !only(namespace, false) {
			return "", "", fmt.Errorf("chain ID %q: the namespace before ':' wants 3 to 8 of a-z, 0-9 and '-'", s)
		}
		if len(reference) < 1 || len(reference) > 32 || !only(reference, true) {
			return "", "", fmt.Errorf("chain ID %q: the reference after ':' wants 1 to 32 of a-z, A-Z, 0-9, '-' and '_'", s)
		}
		return namespace, reference, nil
	}
	return "", "", fmt.Errorf("chain ID %q: want namespace:reference, such as eip155:1", s)
}

// only reports whether s holds only lower-case letters, digits and '-';
// with ref also upper-case letters and '_'.
func only(s string, ref bool) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
		case ref && (c >= 'A' && c <= 'Z' || c == '_'):
		default:
			return false
		}
	}
	return true
}
