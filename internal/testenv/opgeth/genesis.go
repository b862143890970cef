package opgeth

import (
	"encoding/json"
	"math/big"
	"strconv"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// ChainID is the chain ID of the OP chain the node runs; query.chains
// lists it as the OP-stack devnet.
const ChainID = 901

// Addresses of the OP stack's predeploys and system accounts.
var (
	// L1Block holds the L1 fee parameters the execution client charges by.
	L1Block = common.HexToAddress("0x4200000000000000000000000000000000000015")
	// Depositor is the sender of the L1-info deposit of every block.
	Depositor = common.HexToAddress("0xDeaDDEaDDeAdDeAdDEAdDEaddeAddEAdDEAd0001")
	// BaseFeeVault, L1FeeVault and OperatorFeeVault receive the base fee,
	// the L1 data fee and the operator fee (on an OP chain the base fee is
	// not burnt).
	BaseFeeVault     = common.HexToAddress("0x4200000000000000000000000000000000000019")
	L1FeeVault       = common.HexToAddress("0x420000000000000000000000000000000000001A")
	OperatorFeeVault = common.HexToAddress("0x420000000000000000000000000000000000001B")
)

// Storage slots of L1Block that op-geth reads the fee parameters from.
var (
	slotL1BaseFee    = common.BigToHash(big.NewInt(1))
	slotScalars      = common.BigToHash(big.NewInt(3)) // baseFeeScalar [16:20), blobBaseFeeScalar [20:24), sequence number [24:32)
	slotBlobBaseFee  = common.BigToHash(big.NewInt(7))
	slotOperatorFees = common.BigToHash(big.NewInt(8)) // operatorFeeScalar [20:24), operatorFeeConstant [24:32)
)

// Fees are the L1 fee parameters a block's L1-info deposit sets: what the
// L1 data fee and the operator fee of its transactions are computed from.
type Fees struct {
	L1BaseFee           *big.Int // wei
	L1BlobBaseFee       *big.Int // wei
	BaseFeeScalar       uint32
	BlobBaseFeeScalar   uint32
	OperatorFeeScalar   uint32 // Isthmus: gasUsed × scalar / 1e6 ...
	OperatorFeeConstant uint64 // ... + constant, in wei
}

// DefaultFees are Base-like parameters with an operator fee, so that every
// component of a fee is non-zero.
func DefaultFees() Fees {
	return Fees{L1BaseFee: big.NewInt(20e9), L1BlobBaseFee: big.NewInt(3e9), BaseFeeScalar: 2269, BlobBaseFeeScalar: 1055762,
		OperatorFeeScalar: 1_500_000, OperatorFeeConstant: 7_000_000_000}
}

// l1BlockCode is the L1Block predeploy reduced to what the execution
// client reads: called by the depositor with the Isthmus L1-info calldata
// (setL1BlockValuesIsthmus), it stores the L1 base fee, the blob base fee,
// the scalars with the sequence number and the operator-fee parameters in
// the slots of the real contract; any other caller changes nothing.
var l1BlockCode = func() []byte {
	code := []byte{0x33, 0x73} // CALLER PUSH20 depositor
	code = append(code, Depositor.Bytes()...)
	code = append(code,
		0x14, 0x60, 0x1b, 0x57, 0x00, 0x5b, // EQ PUSH1 27 JUMPI STOP JUMPDEST
		0x60, 36, 0x35, 0x60, 1, 0x55, // sstore(1, calldataload(36)): L1 base fee
		0x60, 68, 0x35, 0x60, 7, 0x55, // sstore(7, calldataload(68)): blob base fee
		0x60, 4, 0x35, 0x60, 128, 0x1c, 0x60, 3, 0x55, // sstore(3, calldata[4:20]): scalars, sequence number
		0x60, 164, 0x35, 0x60, 160, 0x1c, 0x60, 8, 0x55, // sstore(8, calldata[164:176]): operator fee
		0x00)
	return code
}()

// genesis is the OP genesis: chain config with every fork to Isthmus at
// 0, the Holocene EIP-1559 parameters in extraData, the funded accounts
// and L1Block with fees' parameters already stored (the first block's
// L1-info deposit stores them again).
func genesis(timestamp uint64, fees Fees, funded []common.Address, balance *big.Int) ([]byte, error) {
	zero := 0
	cfg := map[string]any{
		"chainId": ChainID, "homesteadBlock": zero, "eip150Block": zero, "eip155Block": zero, "eip158Block": zero,
		"byzantiumBlock": zero, "constantinopleBlock": zero, "petersburgBlock": zero, "istanbulBlock": zero,
		"muirGlacierBlock": zero, "berlinBlock": zero, "londonBlock": zero, "arrowGlacierBlock": zero,
		"grayGlacierBlock": zero, "mergeNetsplitBlock": zero, "bedrockBlock": zero,
		"terminalTotalDifficulty": zero,
		"shanghaiTime":            zero, "cancunTime": zero, "pragueTime": zero,
		"regolithTime": zero, "canyonTime": zero, "ecotoneTime": zero, "fjordTime": zero, "graniteTime": zero,
		"holoceneTime": zero, "isthmusTime": zero,
		"depositContractAddress": common.Address{},
		"optimism":               map[string]any{"eip1559Elasticity": 6, "eip1559Denominator": 50, "eip1559DenominatorCanyon": 250},
	}
	alloc := map[string]any{}
	for _, a := range funded {
		alloc[a.Hex()] = map[string]any{"balance": hexutil.EncodeBig(balance)}
	}
	alloc[L1Block.Hex()] = map[string]any{"balance": "0x0", "code": hexutil.Encode(l1BlockCode), "storage": fees.slots(0)}
	g := map[string]any{
		"config":        cfg,
		"nonce":         "0x0",
		"timestamp":     "0x" + strconv.FormatUint(timestamp, 16),
		"extraData":     hexutil.Encode(holoceneExtra()),
		"gasLimit":      hexutil.EncodeUint64(gasLimit),
		"difficulty":    "0x0",
		"mixHash":       common.Hash{},
		"coinbase":      common.Address{},
		"baseFeePerGas": hexutil.EncodeUint64(1e9),
		"alloc":         alloc,
	}
	return json.MarshalIndent(g, "", " ")
}

const gasLimit = 30_000_000

// eip1559Params are Holocene's denominator (250) and elasticity (6), as
// payload attributes carry them; holoceneExtra the same in extraData.
func eip1559Params() []byte { return []byte{0, 0, 0, 250, 0, 0, 0, 6} }
func holoceneExtra() []byte { return append([]byte{0}, eip1559Params()...) }

// slots are fees as L1Block stores them.
func (f Fees) slots(seq uint64) map[string]string {
	var scalars, op common.Hash
	putUint(scalars[16:20], uint64(f.BaseFeeScalar))
	putUint(scalars[20:24], uint64(f.BlobBaseFeeScalar))
	putUint(scalars[24:32], seq)
	putUint(op[20:24], uint64(f.OperatorFeeScalar))
	putUint(op[24:32], f.OperatorFeeConstant)
	return map[string]string{
		slotL1BaseFee.Hex():    common.BigToHash(f.L1BaseFee).Hex(),
		slotScalars.Hex():      scalars.Hex(),
		slotBlobBaseFee.Hex():  common.BigToHash(f.L1BlobBaseFee).Hex(),
		slotOperatorFees.Hex(): op.Hex(),
	}
}

// putUint writes v big-endian into b, which is 1 to 8 bytes long.
func putUint(b []byte, v uint64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}
