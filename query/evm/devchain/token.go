package devchain

import (
	_ "embed" // the demo token's compiled form
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
)

// The demo token is contracts/DemoToken.sol compiled by solc 0.8.30
// (optimizer on, 200 runs), committed because no compiler runs here. To
// regenerate, compile it with solc-js (npm package solc@0.8.30) using
// standard JSON output selection abi and evm.bytecode.object, and write
// the two outputs to contracts/DemoToken.abi and contracts/DemoToken.bin.
var (
	//go:embed contracts/DemoToken.abi
	demoTokenABI string
	//go:embed contracts/DemoToken.bin
	demoTokenBin string
)

// demoToken returns the parsed ABI and the creation bytecode of the demo token.
func demoToken() (abi.ABI, []byte, error) {
	parsed, err := abi.JSON(strings.NewReader(demoTokenABI))
	if err != nil {
		return abi.ABI{}, nil, fmt.Errorf("demo token abi: %w", err)
	}
	code, err := hex.DecodeString(strings.TrimSpace(demoTokenBin))
	if err != nil {
		return abi.ABI{}, nil, fmt.Errorf("demo token bytecode: %w", err)
	}
	return parsed, code, nil
}
