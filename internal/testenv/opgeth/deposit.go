package opgeth

import (
	"encoding/binary"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
)

// depositTxType is the EIP-2718 type of an OP deposit transaction.
const depositTxType = 0x7e

// Deposit is a user deposit, as an L1 OptimismPortal call would make one:
// Mint is credited to From before the call (and stays when the call
// fails); Value moves from From to To (nil To creates a contract from
// Data) as in any transaction; it pays no fee.
type Deposit struct {
	From  common.Address
	To    *common.Address
	Mint  *big.Int // nil: none
	Value *big.Int // nil: none
	Gas   uint64
	Data  []byte
}

// depositTx is op-geth's DepositTx as RLP encodes it.
type depositTx struct {
	SourceHash          common.Hash
	From                common.Address
	To                  *common.Address `rlp:"nil"`
	Mint                *big.Int        `rlp:"nil"`
	Value               *big.Int
	Gas                 uint64
	IsSystemTransaction bool
	Data                []byte
}

// encodeDeposit is the raw transaction of d (0x7e || rlp), its source
// hash derived from the L1 block and the deposit's index in it (the user
// deposit domain, 0).
func encodeDeposit(d Deposit, l1Hash common.Hash, index uint64) ([]byte, error) {
	value := d.Value
	if value == nil {
		value = new(big.Int)
	}
	tx := depositTx{SourceHash: sourceHash(0, l1Hash, index), From: d.From, To: d.To, Mint: d.Mint, Value: value, Gas: d.Gas, Data: d.Data}
	b, err := rlp.EncodeToBytes(&tx)
	if err != nil {
		return nil, err
	}
	return append([]byte{depositTxType}, b...), nil
}

// sourceHash is keccak256(bytes32(domain) ++ keccak256(l1Hash ++ bytes32(n))).
func sourceHash(domain uint64, l1Hash common.Hash, n uint64) common.Hash {
	inner := crypto.Keccak256(l1Hash.Bytes(), common.BigToHash(new(big.Int).SetUint64(n)).Bytes())
	return crypto.Keccak256Hash(common.BigToHash(new(big.Int).SetUint64(domain)).Bytes(), inner)
}

// l1InfoDeposit is the first transaction of every block: the depositor's
// call of L1Block.setL1BlockValuesIsthmus with fees and the L1 block's
// origin (the system deposit domain, 1).
func l1InfoDeposit(fees Fees, seq, l1Number, l1Time uint64, l1Hash common.Hash) ([]byte, error) {
	data := make([]byte, 176)
	copy(data, []byte{0x09, 0x89, 0x99, 0xbe}) // setL1BlockValuesIsthmus()
	binary.BigEndian.PutUint32(data[4:], fees.BaseFeeScalar)
	binary.BigEndian.PutUint32(data[8:], fees.BlobBaseFeeScalar)
	binary.BigEndian.PutUint64(data[12:], seq)
	binary.BigEndian.PutUint64(data[20:], l1Time)
	binary.BigEndian.PutUint64(data[28:], l1Number)
	fees.L1BaseFee.FillBytes(data[36:68])
	fees.L1BlobBaseFee.FillBytes(data[68:100])
	copy(data[100:132], l1Hash.Bytes())
	// 132:164 the batcher hash: zero.
	binary.BigEndian.PutUint32(data[164:], fees.OperatorFeeScalar)
	binary.BigEndian.PutUint64(data[168:], fees.OperatorFeeConstant)
	to := L1Block
	tx := depositTx{SourceHash: sourceHash(1, l1Hash, seq), From: Depositor, To: &to, Value: new(big.Int), Gas: 1_000_000, Data: data}
	b, err := rlp.EncodeToBytes(&tx)
	if err != nil {
		return nil, err
	}
	return append([]byte{depositTxType}, b...), nil
}
