package opgeth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// Tx is a transaction for Mine to sign and include: from Keys[From], to
// To (nil creates a contract from Data), with Value and Gas (default
// 1,000,000); it pays the block's base fee and a priority fee of Tip wei
// a unit of gas (default 1,000).
type Tx struct {
	From  int
	To    *common.Address
	Value *big.Int
	Data  []byte
	Gas   uint64
	Tip   int64
}

// Block is what Mine puts in a block after its L1-info deposit: the user
// deposits, then the signed transactions Raw (as eth_sendRawTransaction
// takes them), then Txs, in order.
type Block struct {
	Deposits []Deposit
	Raw      [][]byte
	Txs      []Tx
}

// Mined is a block Mine made: its number, hash, and the hashes of its
// transactions (the L1-info deposit's first, then Block's in order).
type Mined struct {
	Number uint64
	Hash   common.Hash
	Txs    []common.Hash
}

// SetFees changes the L1 fee parameters from the next block on: its
// L1-info deposit stores them in L1Block, as op-node does when the L1
// fees or the system config change.
func (n *Node) SetFees(f Fees) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fees = f
}

// SetFeeRecipient makes a the fee recipient of the next blocks.
func (n *Node) SetFeeRecipient(a common.Address) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.FeeRecipient = a
}

// Fees returns the L1 fee parameters the next block sets.
func (n *Node) Fees() Fees {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fees
}

// Mine builds one block through the Engine API (engine_forkchoiceUpdatedV3
// with payload attributes that force its transactions, getPayloadV4,
// newPayloadV4, then a forkchoice update to it) and returns it. The
// sequencer's safe and finalized blocks follow the head at SafeLag and
// FinalLag.
func (n *Node) Mine(ctx context.Context, b Block) (Mined, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	number := n.head.Number + 1
	l1Hash := crypto.Keccak256Hash([]byte("wharf l1 block " + strconv.FormatUint(number, 10)))
	info, err := l1InfoDeposit(n.fees, 0, number, n.head.Timestamp, l1Hash)
	if err != nil {
		return Mined{}, err
	}
	raw := []hexutil.Bytes{info}
	deposited := make(map[common.Address]uint64) // deposits bump their sender's nonce
	for i, d := range b.Deposits {
		tx, err := encodeDeposit(d, l1Hash, uint64(i))
		if err != nil {
			return Mined{}, err
		}
		raw = append(raw, tx)
		deposited[d.From]++
	}
	for _, tx := range b.Raw {
		raw = append(raw, tx)
	}
	signer := types.LatestSignerForChainID(big.NewInt(ChainID))
	nonces := make(map[common.Address]uint64)
	for _, t := range b.Txs {
		if t.From < 0 || t.From >= len(n.Keys) {
			return Mined{}, fmt.Errorf("tx from account %d: there are %d", t.From, len(n.Keys))
		}
		from := n.Accounts[t.From]
		if _, ok := nonces[from]; !ok {
			var nonce hexutil.Uint64
			if err := n.Call(ctx, &nonce, "eth_getTransactionCount", from, "latest"); err != nil {
				return Mined{}, err
			}
			nonces[from] = uint64(nonce) + deposited[from]
		}
		gas, tip := t.Gas, t.Tip
		if gas == 0 {
			gas = 1_000_000
		}
		if tip == 0 {
			tip = 1000
		}
		value := t.Value
		if value == nil {
			value = new(big.Int)
		}
		feeCap := new(big.Int).Add(new(big.Int).Mul(n.head.BaseFee, big.NewInt(2)), big.NewInt(tip))
		tx, err := types.SignNewTx(n.Keys[t.From], signer, &types.DynamicFeeTx{ChainID: big.NewInt(ChainID), Nonce: nonces[from],
			GasTipCap: big.NewInt(tip), GasFeeCap: feeCap, Gas: gas, To: t.To, Value: value, Data: t.Data})
		if err != nil {
			return Mined{}, err
		}
		nonces[from]++
		enc, err := tx.MarshalBinary()
		if err != nil {
			return Mined{}, err
		}
		raw = append(raw, enc)
	}
	gl := hexutil.Uint64(gasLimit)
	attrs := map[string]any{
		"timestamp":             hexutil.Uint64(n.head.Timestamp + 2),
		"prevRandao":            crypto.Keccak256Hash(l1Hash.Bytes()),
		"suggestedFeeRecipient": n.FeeRecipient,
		"withdrawals":           []any{},
		"parentBeaconBlockRoot": common.Hash{},
		"transactions":          raw,
		"noTxPool":              true,
		"gasLimit":              gl,
		"eip1559Params":         hexutil.Bytes(eip1559Params()),
	}
	var fcu struct {
		Status    payloadStatus `json:"payloadStatus"`
		PayloadID *string       `json:"payloadId"`
	}
	if err := n.engine(ctx, &fcu, "engine_forkchoiceUpdatedV3", n.forkchoice(n.head.Hash), attrs); err != nil {
		return Mined{}, err
	}
	if fcu.Status.Status != "VALID" || fcu.PayloadID == nil {
		return Mined{}, fmt.Errorf("engine_forkchoiceUpdatedV3 for block %d: %s %s", number, fcu.Status.Status, fcu.Status.Error)
	}
	var env struct {
		Payload  json.RawMessage `json:"executionPayload"`
		Requests []hexutil.Bytes `json:"executionRequests"`
	}
	if err := n.engine(ctx, &env, "engine_getPayloadV4", *fcu.PayloadID); err != nil {
		return Mined{}, err
	}
	var p struct {
		Number       hexutil.Uint64  `json:"blockNumber"`
		Hash         common.Hash     `json:"blockHash"`
		Timestamp    hexutil.Uint64  `json:"timestamp"`
		BaseFee      *hexutil.Big    `json:"baseFeePerGas"`
		Transactions []hexutil.Bytes `json:"transactions"`
	}
	if err := json.Unmarshal(env.Payload, &p); err != nil {
		return Mined{}, fmt.Errorf("engine_getPayloadV4: %w", err)
	}
	if len(p.Transactions) != len(raw) {
		return Mined{}, fmt.Errorf("block %d holds %d transactions, %d were forced", number, len(p.Transactions), len(raw))
	}
	if env.Requests == nil {
		env.Requests = []hexutil.Bytes{}
	}
	var st payloadStatus
	if err := n.engine(ctx, &st, "engine_newPayloadV4", env.Payload, []common.Hash{}, common.Hash{}, env.Requests); err != nil {
		return Mined{}, err
	}
	if st.Status != "VALID" {
		return Mined{}, fmt.Errorf("engine_newPayloadV4 of block %d: %s %s", number, st.Status, st.Error)
	}
	n.hashes = append(n.hashes, p.Hash)
	if err := n.engine(ctx, &fcu, "engine_forkchoiceUpdatedV3", n.forkchoice(p.Hash), nil); err != nil {
		return Mined{}, err
	}
	if fcu.Status.Status != "VALID" {
		return Mined{}, fmt.Errorf("engine_forkchoiceUpdatedV3 to block %d: %s %s", number, fcu.Status.Status, fcu.Status.Error)
	}
	n.head = header{Number: uint64(p.Number), Hash: p.Hash, Timestamp: uint64(p.Timestamp), BaseFee: p.BaseFee.ToInt()}
	m := Mined{Number: uint64(p.Number), Hash: p.Hash}
	for _, tx := range p.Transactions {
		m.Txs = append(m.Txs, crypto.Keccak256Hash(tx))
	}
	return m, nil
}

type payloadStatus struct {
	Status string `json:"status"`
	Error  string `json:"validationError"`
}

// forkchoice is the forkchoice state with head, and the safe and
// finalized blocks at their lags behind it.
func (n *Node) forkchoice(head common.Hash) map[string]any {
	at := func(lag uint64) common.Hash {
		top := uint64(len(n.hashes) - 1)
		if lag > top {
			return n.hashes[0]
		}
		return n.hashes[top-lag]
	}
	return map[string]any{"headBlockHash": head, "safeBlockHash": at(n.safeLag), "finalizedBlockHash": at(n.finalLag)}
}

type rpcHeader struct {
	Number    hexutil.Uint64 `json:"number"`
	Hash      common.Hash    `json:"hash"`
	Timestamp hexutil.Uint64 `json:"timestamp"`
	BaseFee   *hexutil.Big   `json:"baseFeePerGas"`
}

func (h rpcHeader) header() header {
	return header{Number: uint64(h.Number), Hash: h.Hash, Timestamp: uint64(h.Timestamp), BaseFee: h.BaseFee.ToInt()}
}

// jwtToken is the Engine API's bearer token: an HS256 JWT of the secret
// with the issue time.
func jwtToken(secret []byte, now time.Time) string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	claims := enc.EncodeToString([]byte(`{"iat":` + strconv.FormatInt(now.Unix(), 10) + `}`))
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(head + "." + claims))
	return head + "." + claims + "." + enc.EncodeToString(mac.Sum(nil))
}

// Send mines a block of its own with tx and returns tx's receipt; it
// fails tb on error.
func (n *Node) Send(tb testing.TB, tx Tx) map[string]any {
	tb.Helper()
	return n.mineOne(tb, Block{Txs: []Tx{tx}})
}

// Deposit mines a block of its own with the deposit d and returns its
// receipt; it fails tb on error.
func (n *Node) Deposit(tb testing.TB, d Deposit) map[string]any {
	tb.Helper()
	return n.mineOne(tb, Block{Deposits: []Deposit{d}})
}

func (n *Node) mineOne(tb testing.TB, b Block) map[string]any {
	tb.Helper()
	ctx := context.Background()
	m, err := n.Mine(ctx, b)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := n.Receipt(ctx, m.Txs[len(m.Txs)-1])
	if err != nil {
		tb.Fatal(err)
	}
	return r
}
