package adversary

// Hostile tokens: contracts whose symbol(), name() and decimals() answer
// what no honest token does (NUL bytes, invalid UTF-8, control
// characters, bidirectional overrides, formula text, a megabyte, lengths
// that lie, numbers beyond 2^256) and whose transfer reverts with such a
// reason. The generator's movements cover balances; these cover the
// strings a chain hands addrd.

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"
)

// Selectors a hostile token answers, besides transfer, balanceOf and mint.
var (
	selSymbol   = []byte{0x95, 0xd8, 0x9b, 0x41} // symbol()
	selName     = []byte{0x06, 0xfd, 0xde, 0x03} // name()
	selDecimals = []byte{0x31, 0x3c, 0xe5, 0x67} // decimals()
	selError    = []byte{0x08, 0xc3, 0x79, 0xa0} // Error(string)
	selPanic    = []byte{0x4e, 0x48, 0x7b, 0x71} // Panic(uint256)
)

// HostileTexts are the strings a hostile token says, by name. "1 MB" is
// made by the contract as it answers (a megabyte does not fit in code):
// a formula start, a NUL, an invalid byte and a bidi override in every
// 32 bytes of it.
var HostileTexts = []struct{ Name, Text string }{
	{"NUL", "US\x00DC"},
	{"only NUL", "\x00\x00\x00\x00"},
	{"invalid UTF-8", "M\xffKR\xc3("},
	{"control characters", "a\r\nb\x1b[31mred\x07\x7f\u0085"},
	{"bidi override", "\u202eDSU\u202c\u2066x\u2069"},
	{"formula =", "=HYPERLINK(\"http://x.invalid\",\"y\")"},
	{"formula +", "+cmd|' /C calc'!A0"},
	{"formula -", "-2+3+cmd|' /C calc'!A0"},
	{"formula @", "@SUM(1+1)*cmd|' /C calc'!A0"},
	{"markup", "\"><script>alert(1)</script>"},
	{"300 characters", strings.Repeat("Ü", 300)},
	{"1 MB", ""},
}

// bigFill is the word a 1 MB answer repeats.
var bigFill = []byte("=cmd|'/C calc'!A0\x00\xff\u202eAAAAAAAAAAA")[:32]

// bigLen is the length of a 1 MB answer.
const bigLen = 1 << 20

// An answer is what a hostile token returns (or reverts with) for one
// call: bytes, or a string of bigLen bytes the contract writes.
type answer struct {
	data []byte
	big  bool   // an ABI string of bigLen bytes
	sel  []byte // with big: the selector before it (Error(string))
}

// HostileMeta is what one hostile token answers, each a description
// (for a failure's message) and its answer.
type HostileMeta struct {
	Symbol, Name, Decimals, Revert string // descriptions
	symbol, name, decimals, revert answer
}

func (m HostileMeta) String() string {
	return fmt.Sprintf("symbol %s, name %s, decimals %s, revert %s", m.Symbol, m.Name, m.Decimals, m.Revert)
}

// abiStringAnswer is s as a contract returns a string.
func abiStringAnswer(s string) []byte {
	out := append(common.LeftPadBytes([]byte{0x20}, 32), common.LeftPadBytes(big.NewInt(int64(len(s))).Bytes(), 32)...)
	out = append(out, s...)
	return append(out, make([]byte, (32-len(s)%32)%32)...)
}

// textAnswer is text i of HostileTexts in one of the forms a token
// answers a string: an ABI string, a bytes32, or an ABI string whose
// length says more than the answer holds.
func textAnswer(rng *rand.Rand, i int) (string, answer) {
	t := HostileTexts[i]
	if t.Text == "" {
		return t.Name, answer{big: true}
	}
	switch rng.IntN(5) {
	case 0:
		b := []byte(t.Text)
		if len(b) > 32 {
			b = b[:32]
		}
		return t.Name + " (bytes32)", answer{data: common.RightPadBytes(b, 32)}
	case 1:
		a := abiStringAnswer(t.Text)
		// A length of 2^64-1: beyond the answer, and past a 64-bit
		// bound check that adds before it compares.
		copy(a[56:64], bytes.Repeat([]byte{0xff}, 8))
		return t.Name + " (length 2^64-1)", answer{data: a}
	}
	return t.Name, answer{data: abiStringAnswer(t.Text)}
}

// decimalsAnswer is a hostile decimals() answer.
func decimalsAnswer(rng *rand.Rand) (string, answer) {
	max := bytes.Repeat([]byte{0xff}, 32)
	switch rng.IntN(6) {
	case 0:
		return "2^256-1", answer{data: max}
	case 1:
		return "33 bytes", answer{data: append([]byte{1}, max...)}
	case 2:
		return "300", answer{data: common.LeftPadBytes(big.NewInt(300).Bytes(), 32)}
	case 3:
		return "nothing", answer{}
	case 4:
		return "2^255 and more", answer{data: append(common.LeftPadBytes([]byte{0x80}, 32), max...)}
	}
	return "18", answer{data: common.LeftPadBytes([]byte{18}, 32)}
}

// revertAnswer is the data a hostile token's transfer reverts with.
func revertAnswer(rng *rand.Rand, i int) (string, answer) {
	t := HostileTexts[i]
	switch {
	case t.Text == "":
		return "Error(1 MB)", answer{big: true, sel: selError}
	case rng.IntN(4) == 0:
		return "Panic(2^256-1)", answer{data: append(append([]byte{}, selPanic...), bytes.Repeat([]byte{0xff}, 32)...)}
	case rng.IntN(4) == 0:
		return "raw " + t.Name, answer{data: []byte(t.Text)}
	}
	return "Error(" + t.Name + ")", answer{data: append(append([]byte{}, selError...), abiStringAnswer(t.Text)...)}
}

// HostileMetas draws n tokens' metadata from rng: the first
// len(HostileTexts) say each text once as a symbol, a name and a revert
// reason (shifted, so that one token mixes them); the rest at random.
func HostileMetas(rng *rand.Rand, n int) []HostileMeta {
	k := len(HostileTexts)
	out := make([]HostileMeta, n)
	for i := range out {
		si, ni, ri := i%k, (i+1)%k, (i+2)%k
		if i >= k {
			si, ni, ri = rng.IntN(k), rng.IntN(k), rng.IntN(k)
		}
		m := &out[i]
		m.Symbol, m.symbol = textAnswer(rng, si)
		m.Name, m.name = textAnswer(rng, ni)
		m.Decimals, m.decimals = decimalsAnswer(rng)
		m.Revert, m.revert = revertAnswer(rng, ri)
	}
	return out
}

// hostileCode is an ERC-20 (mint, balanceOf, Transfer logs as tokenCode)
// whose symbol(), name() and decimals() answer m's, and whose transfer
// reverts with m's revert data.
func hostileCode(m HostileMeta) []byte {
	a := newAsm()
	a.pushN(0).op(vm.CALLDATALOAD).pushN(224).op(vm.SHR)
	for _, d := range []struct {
		sel   []byte
		label string
	}{{selSymbol, "symbol"}, {selName, "name"}, {selDecimals, "decimals"}, {selMint, "mint"}, {selBalanceOf, "balanceOf"}, {selTransfer, "transfer"}} {
		a.op(vm.DUP1).pushBytes(d.sel).op(vm.EQ).to(d.label).op(vm.JUMPI)
	}
	a.label("fail").pushN(0).op(vm.DUP1, vm.REVERT)
	var data []struct {
		label string
		b     []byte
	}
	ans := func(label string, x answer, end vm.OpCode) {
		a.label(label)
		if x.big {
			bigAnswer(a, label, x.sel, end)
			return
		}
		// Copied from the code after the code's end, behind the
		// JUMPDEST that marks it: returned from memory[1].
		a.pushN(uint64(len(x.data) + 1)).to("data " + label).pushN(0).op(vm.CODECOPY)
		a.pushN(uint64(len(x.data))).pushN(1).op(end)
		data = append(data, struct {
			label string
			b     []byte
		}{label, x.data})
	}
	ans("symbol", m.symbol, vm.RETURN)
	ans("name", m.name, vm.RETURN)
	ans("decimals", m.decimals, vm.RETURN)
	ans("transfer", m.revert, vm.REVERT)

	a.label("balanceOf")
	a.pushN(4).op(vm.CALLDATALOAD, vm.SLOAD).pushN(0).op(vm.MSTORE).pushN(32).pushN(0).op(vm.RETURN)
	a.label("mint") // bal[a] += x, Transfer(0, a, x)
	a.pushN(0x24).op(vm.CALLDATALOAD).pushN(4).op(vm.CALLDATALOAD, vm.DUP1, vm.SLOAD)
	a.op(vm.DUP3, vm.ADD, vm.SWAP1, vm.SSTORE)
	a.pushN(0).op(vm.MSTORE)
	a.pushN(4).op(vm.CALLDATALOAD).pushN(0).pushBytes(transferTopic).pushN(32).pushN(0).op(vm.LOG3, vm.STOP)
	for _, d := range data {
		a.label("data " + d.label)
		a.code = append(a.code, d.b...)
	}
	return a.bytes()
}

// bigAnswer writes an ABI string of bigLen bytes of bigFill (after sel,
// when not nil) and ends with end (RETURN or REVERT).
func bigAnswer(a *asm, label string, sel []byte, end vm.OpCode) {
	// memory[28:32] the selector, [32:64] the offset, [64:96] the length,
	// [96:96+bigLen] the text.
	const base, text = 32, 96
	if sel != nil {
		a.pushBytes(sel).pushN(0).op(vm.MSTORE)
	}
	a.pushN(32).pushN(base).op(vm.MSTORE)
	a.pushN(bigLen).pushN(base + 32).op(vm.MSTORE)
	a.pushN(text)
	a.label(label + " loop")
	a.op(vm.DUP1).pushN(text+bigLen).op(vm.GT, vm.ISZERO).to(label + " done").op(vm.JUMPI)
	a.pushBytes(bigFill).op(vm.DUP2, vm.MSTORE)
	a.pushN(32).op(vm.ADD).to(label + " loop").op(vm.JUMP)
	a.label(label + " done").op(vm.POP)
	if sel != nil {
		a.pushN(4 + 64 + bigLen).pushN(base - 4).op(end)
		return
	}
	a.pushN(64 + bigLen).pushN(base).op(end)
}

// HostileToken is a hostile token deployed.
type HostileToken struct {
	Address common.Address
	Meta    HostileMeta
}

// DeployHostile deploys a token of each of metas and returns once they
// are mined.
func (g *Generator) DeployHostile(ctx context.Context, metas []HostileMeta) ([]HostileToken, error) {
	out := make([]HostileToken, len(metas))
	for i, m := range metas {
		from := g.eoas[0]
		out[i] = HostileToken{Address: crypto.CreateAddress(from, g.s.nonces[from]), Meta: m}
		if _, err := g.s.send(ctx, g.keys[0], nil, nil, deployCode(hostileCode(m)), 3_000_000, 1); err != nil {
			return nil, fmt.Errorf("deploy hostile token %d (%s): %w", i, m, err)
		}
		g.kinds[out[i].Address] = fmt.Sprintf("hostile token %d", i)
	}
	return out, g.seal(ctx)
}

// HostileMint mints amount of token to to: a Transfer log, which makes
// addrd read the token's metadata.
func (g *Generator) HostileMint(ctx context.Context, token, to common.Address, amount *big.Int) error {
	_, err := g.s.send(ctx, g.keys[0], &token, nil, call2(selMint, to, amount), 200_000, 1)
	return err
}

// HostileRevert sends, from key, a transfer of token that reverts with
// the token's revert data: a failed transaction whose reason the node's
// traces tell. It returns the transaction's hash.
func (g *Generator) HostileRevert(ctx context.Context, key int, token common.Address) (common.Hash, error) {
	return g.s.send(ctx, g.keys[key], &token, nil, call2(selTransfer, g.fresh[0], big.NewInt(1)), 4_900_000, 1)
}

// Key returns the address of the generator's key i (0 to 3).
func (g *Generator) Key(i int) common.Address { return g.eoas[i] }

// HostileBigMeta is a token whose symbol() and name() each answer a
// megabyte (its decimals and revert as HostileMetas draws them): minted
// many times, it measures what a token's metadata costs the store per
// transfer.
func HostileBigMeta(rng *rand.Rand) HostileMeta {
	var m HostileMeta
	big := len(HostileTexts) - 1
	m.Symbol, m.symbol = textAnswer(rng, big)
	m.Name, m.name = textAnswer(rng, big)
	m.Decimals, m.decimals = decimalsAnswer(rng)
	m.Revert, m.revert = revertAnswer(rng, 0)
	return m
}
