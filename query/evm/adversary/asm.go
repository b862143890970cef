package adversary

// A tiny EVM assembler for the contracts of contracts.go: no compiler
// runs here, and a few dozen opcodes read better as named operations
// than as hex.

import (
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/core/vm"
)

// asm assembles EVM code: operations, pushes of the smallest width and
// jumps to labels (PUSH2, resolved by bytes).
type asm struct {
	code   []byte
	labels map[string]int
	fixups map[int]string // offset of a PUSH2's operand → its label
}

func newAsm() *asm { return &asm{labels: make(map[string]int), fixups: make(map[int]string)} }

// op appends operations.
func (a *asm) op(ops ...vm.OpCode) *asm {
	for _, o := range ops {
		a.code = append(a.code, byte(o))
	}
	return a
}

// push appends a PUSH of v at the smallest width (PUSH0 for zero).
func (a *asm) push(v *big.Int) *asm {
	b := v.Bytes()
	if len(b) == 0 {
		return a.op(vm.PUSH0)
	}
	a.code = append(a.code, byte(vm.PUSH1)+byte(len(b)-1))
	a.code = append(a.code, b...)
	return a
}

// pushN pushes a small number.
func (a *asm) pushN(n uint64) *asm { return a.push(new(big.Int).SetUint64(n)) }

// pushBytes pushes b as it is (1 to 32 bytes), keeping its width.
func (a *asm) pushBytes(b []byte) *asm {
	a.code = append(a.code, byte(vm.PUSH1)+byte(len(b)-1))
	a.code = append(a.code, b...)
	return a
}

// to pushes the offset of label, for a JUMP or JUMPI after it.
func (a *asm) to(label string) *asm {
	a.code = append(a.code, byte(vm.PUSH2))
	a.fixups[len(a.code)] = label
	a.code = append(a.code, 0, 0)
	return a
}

// label marks a jump destination.
func (a *asm) label(name string) *asm {
	a.labels[name] = len(a.code)
	return a.op(vm.JUMPDEST)
}

// bytes resolves the labels and returns the code.
func (a *asm) bytes() []byte {
	for at, l := range a.fixups {
		dest, ok := a.labels[l]
		if !ok {
			panic(fmt.Sprintf("asm: no label %q", l)) // a bug in contracts.go, found by any test
		}
		a.code[at], a.code[at+1] = byte(dest>>8), byte(dest)
	}
	return a.code
}
