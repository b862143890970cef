package adversary

// The chain a scenario runs on, and the JSON-RPC calls it makes.

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"
)

// Chain is a node a scenario sends to: geth --dev, or the in-process dev
// chain. Both serve eth_sendRawTransaction and the dev API
// (dev_addWithdrawal, dev_setFeeRecipient) over JSON-RPC at URL.
type Chain interface {
	// URL is the node's JSON-RPC endpoint.
	URL() string
	// Fund sends wei to each of to from the chain's own rich account and
	// returns once that is mined.
	Fund(ctx context.Context, to []common.Address, wei *big.Int) error
	// Seal returns once the transactions sent (and the withdrawals
	// added) since the last Seal are mined: the dev chain commits one
	// block of them; geth --dev mines on its own as they arrive.
	Seal(ctx context.Context, sent []common.Hash) error
}

// sender signs and sends transactions from keys it holds, counting their
// nonces itself.
type sender struct {
	rpc     *rpc.Client
	chainID *big.Int
	signer  types.Signer
	nonces  map[common.Address]uint64
	sent    []common.Hash
}

func newSender(ctx context.Context, c *rpc.Client) (*sender, error) {
	var id hexutil.Big
	if err := c.CallContext(ctx, &id, "eth_chainId"); err != nil {
		return nil, fmt.Errorf("eth_chainId: %w", err)
	}
	return &sender{rpc: c, chainID: id.ToInt(), signer: types.LatestSignerForChainID(id.ToInt()), nonces: make(map[common.Address]uint64)}, nil
}

// send signs a transaction from key to to (nil: a creation) and sends
// it. Its tip is tip gwei, so that each block's fee recipient earns.
func (s *sender) send(ctx context.Context, key *ecdsa.PrivateKey, to *common.Address, value *big.Int, data []byte, gas uint64, tip int64) (common.Hash, error) {
	from := crypto.PubkeyToAddress(key.PublicKey)
	if value == nil {
		value = new(big.Int)
	}
	tx, err := types.SignNewTx(key, s.signer, &types.DynamicFeeTx{
		ChainID: s.chainID, Nonce: s.nonces[from], To: to, Value: value, Data: data, Gas: gas,
		GasTipCap: new(big.Int).Mul(big.NewInt(tip), big.NewInt(1e9)), GasFeeCap: big.NewInt(200e9),
	})
	if err != nil {
		return common.Hash{}, err
	}
	raw, err := tx.MarshalBinary()
	if err != nil {
		return common.Hash{}, err
	}
	if err := s.rpc.CallContext(ctx, nil, "eth_sendRawTransaction", hexutil.Encode(raw)); err != nil {
		return common.Hash{}, fmt.Errorf("send from %s nonce %d: %w", from.Hex(), s.nonces[from], err)
	}
	s.nonces[from]++
	s.sent = append(s.sent, tx.Hash())
	return tx.Hash(), nil
}

// take returns the transactions sent since the last take.
func (s *sender) take() []common.Hash {
	out := s.sent
	s.sent = nil
	return out
}

// Coinbase is a Chain without geth's dev API (anvil, an OP-stack chain):
// it has no beacon withdrawals, and its fee recipient is set through it.
type Coinbase interface {
	Chain
	// SetFeeRecipient makes a the fee recipient of the blocks to come.
	SetFeeRecipient(ctx context.Context, a common.Address) error
}

// Rollup is a Chain of the OP stack (op-geth and its sequencer): a
// Coinbase that takes deposits and changes of the L1 fee parameters,
// which the block of the next Seal carries.
type Rollup interface {
	Coinbase
	// Deposit queues d for the next Seal's block, before its
	// transactions.
	Deposit(d Deposit)
	// SetL1Fees changes the L1 fee parameters from the next block on.
	SetL1Fees(f L1Fees)
}

// Deposit is an OP-stack deposit: Mint credited to From before the call
// (kept when it fails), Value moved to To (nil: a creation from Data).
type Deposit struct {
	From  common.Address
	To    *common.Address
	Mint  *big.Int
	Value *big.Int
	Gas   uint64
	Data  []byte
}

// L1Fees are the parameters of an OP-stack chain's L1 data fee and
// operator fee.
type L1Fees struct {
	L1BaseFee, BlobBaseFee                              *big.Int
	BaseFeeScalar, BlobBaseFeeScalar, OperatorFeeScalar uint32
	OperatorFeeConstant                                 uint64
}
