package utxo

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/btcsuite/btcd/btcutil/v2/hdkeychain"
	"github.com/btcsuite/btcd/txscript/v2"
)

// Output descriptors (BIP 380-386) of the wallets a requester tracks:
// pkh(KEY), wpkh(KEY), sh(wpkh(KEY)), tr(KEY) (key path only) and
// wsh(sortedmulti(k,KEY,...)). A KEY is an extended public key (xpub on
// mainnet, tpub on the test networks) with an optional origin
// [fingerprint/path] and unhardened steps after it, the last of which
// may be * (a ranged descriptor), or a hex public key.

// ErrInvalidDescriptor is wrapped by every error of ParseDescriptor and
// of a Descriptor's derivation.
var ErrInvalidDescriptor = errors.New("invalid descriptor")

// Gap limits of a wallet: addresses are derived until GapLimit
// consecutive ones have no history.
const (
	DefaultGapLimit = 20
	MaxGapLimit     = 1000
)

// MaxMultisigKeys is the most keys a sortedmulti takes (CHECKMULTISIG's 20).
const MaxMultisigKeys = 20

// Descriptor is a parsed output descriptor.
type Descriptor struct {
	// String is the descriptor in its canonical form, with its checksum.
	String string
	// Kind is "pkh", "wpkh", "sh(wpkh)", "tr" or "wsh(sortedmulti)".
	Kind string
	// Ranged is true when the keys end in /*: Derive takes an index.
	Ranged bool
	// Threshold is k of wsh(sortedmulti(k,...)); 0 otherwise.
	Threshold int

	net  *Network
	keys []descKey
}

// descKey is one KEY expression.
type descKey struct {
	xpub  *hdkeychain.ExtendedKey // nil for a plain public key
	steps []uint32                // unhardened steps after the xpub
	star  bool                    // ends in /*
	pub   []byte                  // a plain key: 33 bytes, or 32 x-only in tr
}

// DescriptorChecksum returns the BIP 380 checksum of a descriptor
// written without one: 8 characters of the bech32 alphabet.
func DescriptorChecksum(desc string) (string, error) {
	const input = "0123456789()[],'/*abcdefgh@:$%{}IJKLMNOPQRSTUVWXYZ&+-.;<=>?!^_|~ijklmnopqrstuvwxyzABCDEFGH`#\"\\ "
	const charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
	polymod := func(c uint64, val int) uint64 {
		c0 := c >> 35
		c = (c&0x7ffffffff)<<5 ^ uint64(val)
		for i, g := range [5]uint64{0xf5dee51989, 0xa9fdca3312, 0x1bab10e32d, 0x3706b1677a, 0x644d626ffd} {
			if c0>>i&1 == 1 {
				c ^= g
			}
		}
		return c
	}
	c, cls, clscount := uint64(1), 0, 0
	for i := 0; i < len(desc); i++ {
		pos := strings.IndexByte(input, desc[i])
		if pos < 0 {
			return "", fmt.Errorf("descriptor: character %q at %d is outside BIP 380's character set: %w", desc[i], i, ErrInvalidDescriptor)
		}
		c = polymod(c, pos&31)
		cls = cls*3 + pos>>5
		if clscount++; clscount == 3 {
			c = polymod(c, cls)
			cls, clscount = 0, 0
		}
	}
	if clscount > 0 {
		c = polymod(c, cls)
	}
	for range 8 {
		c = polymod(c, 0)
	}
	c ^= 1
	out := make([]byte, 8)
	for j := range 8 {
		out[j] = charset[c>>(5*(7-j))&31]
	}
	return string(out), nil
}

// maxDescriptorLen bounds what is read: a 20-key multisig with origins
// is about 2,900 characters.
const maxDescriptorLen = 4096

// ParseDescriptor reads an output descriptor of network n. A checksum
// (#xxxxxxxx), when given, must be the descriptor's. Refused, naming the
// rule: other script kinds, private keys, keys of another network,
// hardened steps after an extended public key (they need the private
// key), a * anywhere but last or hardened, tr with script paths,
// sortedmulti with k outside 1..n or more than 20 keys, ranged and
// unranged keys mixed. Errors wrap ErrInvalidDescriptor.
func ParseDescriptor(n *Network, s string) (*Descriptor, error) {
	bad := func(format string, args ...any) (*Descriptor, error) {
		return nil, fmt.Errorf("descriptor %q: %s: %w", clip(s), fmt.Sprintf(format, args...), ErrInvalidDescriptor)
	}
	if len(s) > maxDescriptorLen {
		return bad("longer than %d characters", maxDescriptorLen)
	}
	body, sum, hasSum := strings.Cut(s, "#")
	want, err := DescriptorChecksum(body)
	if err != nil {
		return nil, err
	}
	if hasSum && sum != want {
		return bad("checksum #%s is not the descriptor's (BIP 380: a typo, or another descriptor)", clip(sum))
	}
	d := &Descriptor{String: body + "#" + want, net: n}
	inner, ok := "", false
	switch {
	case unwrap(body, "sh(wpkh(", "))", &inner):
		d.Kind, ok = "sh(wpkh)", true
	case unwrap(body, "wsh(sortedmulti(", "))", &inner):
		d.Kind = "wsh(sortedmulti)"
		return d.parseMulti(s, inner)
	case unwrap(body, "pkh(", ")", &inner):
		d.Kind, ok = "pkh", true
	case unwrap(body, "wpkh(", ")", &inner):
		d.Kind, ok = "wpkh", true
	case unwrap(body, "tr(", ")", &inner):
		d.Kind, ok = "tr", true
		if strings.Contains(inner, ",") {
			return bad("tr with script paths: only the key path, tr(KEY), is tracked")
		}
	}
	if !ok {
		return bad("not one of pkh(KEY), wpkh(KEY), sh(wpkh(KEY)), tr(KEY), wsh(sortedmulti(k,KEY,...))")
	}
	k, err := d.parseKey(inner)
	if err != nil {
		return bad("%v", err)
	}
	d.keys, d.Ranged = []descKey{k}, k.star
	return d, nil
}

// unwrap sets *inner to what s holds between prefix and suffix.
func unwrap(s, prefix, suffix string, inner *string) bool {
	if strings.HasPrefix(s, prefix) && strings.HasSuffix(s, suffix) && len(s) >= len(prefix)+len(suffix) {
		*inner = s[len(prefix) : len(s)-len(suffix)]
		return true
	}
	return false
}

// parseMulti reads k,KEY,KEY... of wsh(sortedmulti(...)).
func (d *Descriptor) parseMulti(s, inner string) (*Descriptor, error) {
	bad := func(format string, args ...any) (*Descriptor, error) {
		return nil, fmt.Errorf("descriptor %q: %s: %w", clip(s), fmt.Sprintf(format, args...), ErrInvalidDescriptor)
	}
	parts := strings.Split(inner, ",")
	k, err := strconv.Atoi(parts[0])
	if err != nil {
		return bad("sortedmulti's threshold %q is not a number", clip(parts[0]))
	}
	keys := parts[1:]
	switch {
	case len(keys) == 0:
		return bad("sortedmulti without keys")
	case len(keys) > MaxMultisigKeys:
		return bad("sortedmulti of %d keys: at most %d", len(keys), MaxMultisigKeys)
	case k < 1 || k > len(keys):
		return bad("sortedmulti threshold %d of %d keys: it must be 1 to %d", k, len(keys), len(keys))
	}
	d.Threshold = k
	for i, ks := range keys {
		key, err := d.parseKey(ks)
		if err != nil {
			return bad("key %d: %v", i+1, err)
		}
		if i > 0 && key.star != d.Ranged {
			return bad("key %d: ranged and unranged keys mixed (each ends in /* or none does)", i+1)
		}
		d.Ranged = key.star
		d.keys = append(d.keys, key)
	}
	return d, nil
}

// parseKey reads one KEY expression.
func (d *Descriptor) parseKey(s string) (descKey, error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return descKey{}, errors.New("key origin without ]")
		}
		if err := checkOrigin(s[1:end]); err != nil {
			return descKey{}, err
		}
		s = s[end+1:]
	}
	if s == "" {
		return descKey{}, errors.New("no key")
	}
	if isHex(s) {
		return d.parsePlainKey(s)
	}
	parts := strings.Split(s, "/")
	xk, err := hdkeychain.NewKeyFromString(parts[0])
	if err != nil {
		return descKey{}, fmt.Errorf("%q is neither a hex public key nor an extended public key: %v", clip(parts[0]), err)
	}
	if xk.IsPrivate() {
		return descKey{}, errors.New("a private key: give the extended public key (xpub/tpub), addrd never holds private keys")
	}
	if !bytes.Equal(xk.Version(), d.net.Params.HDPublicKeyID[:]) {
		want := "xpub"
		if d.net.Params.HDPublicKeyID != [4]byte{0x04, 0x88, 0xb2, 0x1e} {
			want = "tpub"
		}
		return descKey{}, fmt.Errorf("extended key of another network (version %x): %s takes a %s", xk.Version(), d.net.Name, want)
	}
	k := descKey{xpub: xk}
	for i, p := range parts[1:] {
		last := i == len(parts)-2
		switch {
		case p == "*" && last:
			k.star = true
		case p == "*":
			return descKey{}, errors.New("* must be the last step")
		case p == "*'" || p == "*h" || p == "*H":
			return descKey{}, errors.New("hardened * after an extended public key: hardened steps need the private key")
		case strings.HasSuffix(p, "'") || strings.HasSuffix(p, "h") || strings.HasSuffix(p, "H"):
			return descKey{}, fmt.Errorf("hardened step %s after an extended public key: hardened steps need the private key (put them in the key's origin)", p)
		default:
			step, err := strconv.ParseUint(p, 10, 32)
			if err != nil || step >= hdkeychain.HardenedKeyStart {
				return descKey{}, fmt.Errorf("step %q is not an index below 2^31", clip(p))
			}
			k.steps = append(k.steps, uint32(step))
		}
	}
	return k, nil
}

// parsePlainKey reads a hex public key: compressed (33 bytes), or
// x-only (32 bytes) in tr.
func (d *Descriptor) parsePlainKey(s string) (descKey, error) {
	b, _ := hex.DecodeString(s)
	switch {
	case d.Kind == "tr" && len(b) == 32:
		if _, err := schnorr.ParsePubKey(b); err != nil {
			return descKey{}, fmt.Errorf("x-only key: %v", err)
		}
	case len(b) == 33:
		if _, err := btcec.ParsePubKey(b); err != nil {
			return descKey{}, fmt.Errorf("public key: %v", err)
		}
	default:
		return descKey{}, fmt.Errorf("hex public key of %d bytes: a compressed key has 33 (x-only in tr: 32)", len(b))
	}
	return descKey{pub: b}, nil
}

// checkOrigin checks [fingerprint/path] (its steps may be hardened).
func checkOrigin(o string) error {
	parts := strings.Split(o, "/")
	if len(parts[0]) != 8 || !isHex(parts[0]) {
		return fmt.Errorf("key origin's fingerprint %q is not 8 hex digits", clip(parts[0]))
	}
	for _, p := range parts[1:] {
		p = strings.TrimRight(p, "'hH")
		if n, err := strconv.ParseUint(p, 10, 32); err != nil || n >= hdkeychain.HardenedKeyStart {
			return fmt.Errorf("key origin's step %q is not an index below 2^31", clip(p))
		}
	}
	return nil
}

func isHex(s string) bool {
	if len(s)%2 != 0 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// Derive returns the address at index i of a ranged descriptor (the
// value of *), or the one address of an unranged one (i must be 0).
func (d *Descriptor) Derive(i uint32) (Address, error) {
	if !d.Ranged && i != 0 {
		return Address{}, fmt.Errorf("descriptor %s: not ranged, it has the one address of index 0: %w", d.String, ErrInvalidDescriptor)
	}
	if i >= hdkeychain.HardenedKeyStart {
		return Address{}, fmt.Errorf("descriptor %s: index %d: unhardened indexes end at 2^31-1: %w", d.String, i, ErrInvalidDescriptor)
	}
	pubs := make([][]byte, len(d.keys))
	for j, k := range d.keys {
		p, err := k.derive(i)
		if err != nil {
			return Address{}, fmt.Errorf("descriptor %s: index %d: %w", d.String, i, err)
		}
		pubs[j] = p
	}
	script, err := d.script(pubs)
	if err != nil {
		return Address{}, fmt.Errorf("descriptor %s: index %d: %w", d.String, i, err)
	}
	return AddressFromScript(d.net, script)
}

// DeriveRange returns the addresses at indexes from to to-1. It refuses
// a range of more than MaxGapLimit addresses: a wallet grows by its gap
// limit, never unbounded.
func (d *Descriptor) DeriveRange(from, to uint32) ([]Address, error) {
	if to < from || to-from > MaxGapLimit {
		return nil, fmt.Errorf("descriptor %s: range [%d, %d): at most %d addresses at once: %w", d.String, from, to, MaxGapLimit, ErrInvalidDescriptor)
	}
	out := make([]Address, 0, to-from)
	for i := from; i < to; i++ {
		a, err := d.Derive(i)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// CheckGapLimit checks a wallet's gap limit: 1 to MaxGapLimit.
func CheckGapLimit(gap int) error {
	if gap < 1 || gap > MaxGapLimit {
		return fmt.Errorf("gap limit %d: it must be 1 to %d (default %d): %w", gap, MaxGapLimit, DefaultGapLimit, ErrInvalidDescriptor)
	}
	return nil
}

// derive returns the key's compressed public key at index i.
func (k descKey) derive(i uint32) ([]byte, error) {
	if k.xpub == nil {
		return k.pub, nil
	}
	x := k.xpub
	var err error
	steps := k.steps
	if k.star {
		steps = append(append([]uint32(nil), steps...), i)
	}
	for _, s := range steps {
		if x, err = x.Derive(s); err != nil {
			return nil, err
		}
	}
	pk, err := x.ECPubKey()
	if err != nil {
		return nil, err
	}
	return pk.SerializeCompressed(), nil
}

// script is the output script of the descriptor's kind over keys pubs.
func (d *Descriptor) script(pubs [][]byte) ([]byte, error) {
	switch d.Kind {
	case "pkh":
		return append(append([]byte{0x76, 0xa9, 0x14}, address.Hash160(pubs[0])...), 0x88, 0xac), nil
	case "wpkh":
		return append([]byte{0x00, 0x14}, address.Hash160(pubs[0])...), nil
	case "sh(wpkh)":
		redeem := append([]byte{0x00, 0x14}, address.Hash160(pubs[0])...)
		return append(append([]byte{0xa9, 0x14}, address.Hash160(redeem)...), 0x87), nil
	case "tr":
		var internal *btcec.PublicKey
		var err error
		if len(pubs[0]) == 32 {
			internal, err = schnorr.ParsePubKey(pubs[0])
		} else {
			internal, err = btcec.ParsePubKey(pubs[0])
		}
		if err != nil {
			return nil, err
		}
		out := txscript.ComputeTaprootKeyNoScript(internal)
		return append([]byte{0x51, 0x20}, schnorr.SerializePubKey(out)...), nil
	case "wsh(sortedmulti)":
		sorted := append([][]byte(nil), pubs...)
		sort.Slice(sorted, func(a, b int) bool { return bytes.Compare(sorted[a], sorted[b]) < 0 })
		b := txscript.NewScriptBuilder().AddInt64(int64(d.Threshold))
		for _, p := range sorted {
			b.AddData(p)
		}
		ws, err := b.AddInt64(int64(len(sorted))).AddOp(txscript.OP_CHECKMULTISIG).Script()
		if err != nil {
			return nil, err
		}
		h := sha256.Sum256(ws)
		return append([]byte{0x00, 0x20}, h[:]...), nil
	}
	return nil, fmt.Errorf("kind %s: %w", d.Kind, ErrInvalidDescriptor)
}
