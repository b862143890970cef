package utxo

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/address/v2/base58"
	"github.com/btcsuite/btcd/address/v2/bech32"
)

// Address types: the output scripts an address names.
const (
	P2PKH  = "p2pkh"  // pay to public key hash: base58check, version PubKeyHashAddrID
	P2SH   = "p2sh"   // pay to script hash: base58check, version ScriptHashAddrID
	P2WPKH = "p2wpkh" // witness v0, 20-byte program: bech32
	P2WSH  = "p2wsh"  // witness v0, 32-byte program: bech32
	P2TR   = "p2tr"   // witness v1, 32-byte program (taproot): bech32m
)

// Address is an address of a network in its canonical form, with the
// output script it pays to.
type Address struct {
	// String is the canonical form: bech32 in lower case, base58check as
	// written (a Litecoin P2SH with the legacy version byte is written
	// with the current one, as Litecoin Core does).
	String string
	// Type is P2PKH, P2SH, P2WPKH, P2WSH or P2TR.
	Type string
	// Script is the output script (scriptPubKey) the address pays to: the
	// key outputs are matched by.
	Script []byte
}

// ErrInvalidAddress is wrapped by every error of ParseAddress.
var ErrInvalidAddress = errors.New("invalid address")

// AddressError says which rule an address breaks.
type AddressError struct {
	Input string
	Rule  string
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("address %q: %s", clip(e.Input), e.Rule)
}

// Unwrap makes errors.Is(err, ErrInvalidAddress) hold.
func (e *AddressError) Unwrap() error { return ErrInvalidAddress }

// clip keeps an error message short when the input is long.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

// maxAddressLen bounds what is read: bech32 strings are at most 90
// characters (BIP 173), base58check addresses about 35.
const maxAddressLen = 90

// ParseAddress reads an address of network n: P2PKH and P2SH in
// base58check, P2WPKH and P2WSH in bech32, P2TR in bech32m, with the
// network's prefixes and valid checksums. An address of another network
// is refused naming both; so are mixed-case bech32 (BIP 173), a wrong
// checksum, a witness version or program length that names no address
// type here, and anything that is not printable ASCII. Errors wrap
// ErrInvalidAddress.
func ParseAddress(n *Network, s string) (Address, error) {
	bad := func(format string, args ...any) (Address, error) {
		return Address{}, &AddressError{Input: s, Rule: fmt.Sprintf(format, args...)}
	}
	switch {
	case s == "":
		return bad("empty")
	case len(s) > maxAddressLen:
		return bad("longer than %d characters", maxAddressLen)
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return bad("character %q at %d: an address is printable ASCII without spaces", s[i], i)
		}
	}
	if one := strings.LastIndexByte(s, '1'); one > 0 {
		hrp := strings.ToLower(s[:one])
		if nets := networksWithHRP(hrp); len(nets) > 0 {
			return parseSegwit(n, s, hrp, nets)
		}
	}
	return parseBase58(n, s)
}

// parseSegwit reads a bech32/bech32m address whose human-readable part
// hrp is that of the networks nets.
func parseSegwit(n *Network, s, hrp string, nets []string) (Address, error) {
	bad := func(format string, args ...any) (Address, error) {
		return Address{}, &AddressError{Input: s, Rule: fmt.Sprintf(format, args...)}
	}
	lower := strings.ToLower(s)
	if lower != s && strings.ToUpper(s) != s {
		return bad("mixed-case bech32 (BIP 173 allows all lower or all upper case)")
	}
	if hrp != n.Params.Bech32HRPSegwit {
		return bad("an address of %s (prefix %s1), this chain is %s (prefix %s1)",
			strings.Join(nets, "/"), hrp, n.Name, n.Params.Bech32HRPSegwit)
	}
	_, data, enc, err := bech32.DecodeGeneric(lower)
	if err != nil {
		return bad("not valid bech32: %v", err)
	}
	if len(data) < 1 {
		return bad("bech32 without a witness version")
	}
	version := data[0]
	program, err := bech32.ConvertBits(data[1:], 5, 8, false)
	if err != nil {
		return bad("witness program: %v", err)
	}
	var a address.Address
	switch {
	case version == 0 && enc != bech32.Version0:
		return bad("witness v0 must use the bech32 checksum (BIP 173), this is bech32m")
	case version != 0 && enc != bech32.VersionM:
		return bad("witness v%d must use the bech32m checksum (BIP 350), this is bech32", version)
	case version == 0 && len(program) == 20:
		a, err = address.NewAddressWitnessPubKeyHash(program, n.Params)
	case version == 0 && len(program) == 32:
		a, err = address.NewAddressWitnessScriptHash(program, n.Params)
	case version == 0:
		return bad("witness v0 program of %d bytes (P2WPKH has 20, P2WSH 32)", len(program))
	case version == 1 && len(program) == 32:
		a, err = address.NewAddressTaproot(program, n.Params)
	default:
		return bad("witness v%d program of %d bytes: no address type here (v0 P2WPKH/P2WSH, v1 P2TR of 32 bytes)", version, len(program))
	}
	if err != nil {
		return bad("%v", err)
	}
	return AddressFromScript(n, mustScript(a))
}

// parseBase58 reads a base58check P2PKH or P2SH address.
func parseBase58(n *Network, s string) (Address, error) {
	bad := func(format string, args ...any) (Address, error) {
		return Address{}, &AddressError{Input: s, Rule: fmt.Sprintf(format, args...)}
	}
	payload, version, err := base58.CheckDecode(s)
	switch {
	case errors.Is(err, base58.ErrChecksum):
		return bad("base58check checksum mismatch")
	case err != nil:
		return bad("neither bech32 of a known network nor base58check: %v", err)
	case len(payload) != 20:
		return bad("base58check payload of %d bytes (P2PKH and P2SH carry 20)", len(payload))
	}
	p := n.Params
	var script []byte
	switch version {
	case p.PubKeyHashAddrID:
		script = append(append([]byte{0x76, 0xa9, 0x14}, payload...), 0x88, 0xac)
	case p.ScriptHashAddrID:
		script = append(append([]byte{0xa9, 0x14}, payload...), 0x87)
	default:
		if n.LegacyScriptHashAddrID != 0 && version == n.LegacyScriptHashAddrID {
			script = append(append([]byte{0xa9, 0x14}, payload...), 0x87)
			break
		}
		if nets := networksWithBase58(version); len(nets) > 0 {
			return bad("an address of %s (version byte 0x%02x), this chain is %s (P2PKH 0x%02x, P2SH 0x%02x)",
				strings.Join(nets, "/"), version, n.Name, p.PubKeyHashAddrID, p.ScriptHashAddrID)
		}
		return bad("version byte 0x%02x is no address type of %s (P2PKH 0x%02x, P2SH 0x%02x)",
			version, n.Name, p.PubKeyHashAddrID, p.ScriptHashAddrID)
	}
	return AddressFromScript(n, script)
}

// AddressFromScript returns the address an output script pays to on
// network n: one of the five templates exactly. ok is false (with an
// error wrapping ErrInvalidAddress) for any other script: OP_RETURN,
// bare multisig, pay-to-pubkey, future witness versions, non-standard
// scripts, which no address is credited with.
func AddressFromScript(n *Network, script []byte) (Address, error) {
	var (
		a   address.Address
		typ string
		err error
	)
	switch {
	case len(script) == 25 && script[0] == 0x76 && script[1] == 0xa9 && script[2] == 0x14 && script[23] == 0x88 && script[24] == 0xac:
		a, err = address.NewAddressPubKeyHash(script[3:23], n.Params)
		typ = P2PKH
	case len(script) == 23 && script[0] == 0xa9 && script[1] == 0x14 && script[22] == 0x87:
		a, err = address.NewAddressScriptHashFromHash(script[2:22], n.Params)
		typ = P2SH
	case len(script) == 22 && script[0] == 0x00 && script[1] == 0x14:
		a, err = address.NewAddressWitnessPubKeyHash(script[2:], n.Params)
		typ = P2WPKH
	case len(script) == 34 && script[0] == 0x00 && script[1] == 0x20:
		a, err = address.NewAddressWitnessScriptHash(script[2:], n.Params)
		typ = P2WSH
	case len(script) == 34 && script[0] == 0x51 && script[1] == 0x20:
		a, err = address.NewAddressTaproot(script[2:], n.Params)
		typ = P2TR
	default:
		return Address{}, &AddressError{Input: fmt.Sprintf("script %x", script), Rule: "pays to no address (not P2PKH, P2SH, P2WPKH, P2WSH or P2TR)"}
	}
	if err != nil {
		return Address{}, &AddressError{Input: fmt.Sprintf("script %x", script), Rule: err.Error()}
	}
	return Address{String: a.EncodeAddress(), Type: typ, Script: bytes.Clone(script)}, nil
}

// mustScript is the output script of an address built from a program of
// the right length (it cannot fail).
func mustScript(a address.Address) []byte {
	switch a := a.(type) {
	case *address.AddressWitnessPubKeyHash:
		return append([]byte{0x00, 0x14}, a.WitnessProgram()...)
	case *address.AddressWitnessScriptHash:
		return append([]byte{0x00, 0x20}, a.WitnessProgram()...)
	case *address.AddressTaproot:
		return append([]byte{0x51, 0x20}, a.WitnessProgram()...)
	}
	panic(fmt.Sprintf("utxo: no script for %T", a))
}

// networksWithHRP names the known networks whose bech32 prefix is hrp.
func networksWithHRP(hrp string) []string {
	var out []string
	for _, n := range Networks() {
		if n.Params.Bech32HRPSegwit == hrp {
			out = append(out, n.Name)
		}
	}
	return out
}

// networksWithBase58 names the known networks that write P2PKH or P2SH
// with the version byte v.
func networksWithBase58(v byte) []string {
	var out []string
	for _, n := range Networks() {
		if n.Params.PubKeyHashAddrID == v || n.Params.ScriptHashAddrID == v || (n.LegacyScriptHashAddrID != 0 && n.LegacyScriptHashAddrID == v) {
			out = append(out, n.Name)
		}
	}
	return out
}
