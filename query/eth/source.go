package eth

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/wharfhq/wharf/query"
)

var _ query.Source = (*Source)(nil)

// transferTopic is topic 0 of an ERC-20 (and ERC-721) Transfer event.
var transferTopic = crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))

// Function selectors of the ERC-20 reads.
var (
	selBalanceOf = hexutil.MustDecode("0x70a08231")
	selSymbol    = hexutil.MustDecode("0x95d89b41")
	selDecimals  = hexutil.MustDecode("0x313ce567")
)

// SourceConfig tunes a Source; the zero value is usable.
type SourceConfig struct {
	// Timeout bounds every HTTP request to the node; default 30 s.
	Timeout time.Duration
	// BatchSize is the most calls sent in one JSON-RPC batch; default 100
	// (geth accepts 1000, some providers fewer).
	BatchSize int
	// BlockBatchSize is the most full blocks asked for in one batch;
	// default 16, so that a batch of busy blocks stays a few megabytes.
	BlockBatchSize int
	// LogRange is the first width of a filtered eth_getLogs range; default
	// 2000. It adapts: halved when the node refuses a range or its result
	// as too large, doubled after answers, up to MaxLogRange (default
	// 1,000,000), and never again to a width refused for its range.
	LogRange    uint64
	MaxLogRange uint64
	// BlockReceiptsFrom is the number of matched transactions of a block
	// from which one eth_getBlockReceipts is cheaper than a batch of
	// eth_getTransactionReceipt; default 16.
	BlockReceiptsFrom int
}

// Source is query.Source on an Ethereum JSON-RPC endpoint. It is safe
// for concurrent use.
type Source struct {
	rpc *rpc.Client
	eth *ethclient.Client
	cfg SourceConfig

	mu     sync.Mutex
	tokens map[common.Address]tokenMeta // symbol and decimals, read once

	spanMu sync.Mutex
	span   logSpan // width of filtered eth_getLogs ranges

	// secrets are the secret parts of the node's URL, scrubbed from any
	// text the node sends before it is part of an error (node.go).
	secrets secrets
}

type tokenMeta struct {
	symbol   string
	decimals int
}

// Dial returns a Source on the JSON-RPC endpoint url (http, https, ws or
// an IPC path). Over HTTP no connection is made until the first call, and
// the URL's userinfo, path and query are kept out of every error (see
// node.go).
func Dial(ctx context.Context, url string, cfg SourceConfig) (*Source, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	// Receipts are read a few blocks at a time: keep those connections.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 16
	var rt http.RoundTripper = transport
	dial := url
	if public, full, ok := splitSecret(url); ok {
		dial, rt = public, secretTransport{base: transport, full: full}
	}
	c, err := rpc.DialOptions(ctx, dial, rpc.WithHTTPClient(&http.Client{Timeout: cfg.Timeout, Transport: rt}))
	if err != nil {
		sec := urlSecrets(url)
		return nil, fmt.Errorf("dial %s: %w: %w", RedactURL(url), query.ErrUnavailable, &nodeError{reason(err, sec), err})
	}
	src := NewSource(c, cfg)
	src.secrets = urlSecrets(url)
	return src, nil
}

// NewSource returns a Source on an RPC client; Close closes the client.
func NewSource(c *rpc.Client, cfg SourceConfig) *Source {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 100
	}
	if cfg.BlockBatchSize <= 0 {
		cfg.BlockBatchSize = 16
	}
	if cfg.LogRange == 0 {
		cfg.LogRange = 2000
	}
	if cfg.MaxLogRange == 0 {
		cfg.MaxLogRange = 1_000_000
	}
	if cfg.BlockReceiptsFrom <= 0 {
		cfg.BlockReceiptsFrom = 16
	}
	return &Source{rpc: c, eth: ethclient.NewClient(c), cfg: cfg, tokens: make(map[common.Address]tokenMeta),
		span: logSpan{width: cfg.LogRange, max: cfg.MaxLogRange}}
}

// Close closes the connection to the node.
func (s *Source) Close() { s.rpc.Close() }

// ChainID returns the node's chain ID (eth_chainId).
func (s *Source) ChainID(ctx context.Context) (uint64, error) {
	id, err := s.eth.ChainID(ctx)
	if err != nil {
		return 0, s.unavailable(ctx, "eth_chainId", err)
	}
	if !id.IsUint64() {
		return 0, fmt.Errorf("eth_chainId: %s does not fit 64 bits", id)
	}
	return id.Uint64(), nil
}

// Head returns the number of the node's latest block.
func (s *Source) Head(ctx context.Context) (uint64, error) {
	n, err := s.eth.BlockNumber(ctx)
	if err != nil {
		return 0, s.unavailable(ctx, "eth_blockNumber", err)
	}
	return n, nil
}

type rpcBlock struct {
	Number       hexutil.Uint64  `json:"number"`
	Hash         common.Hash     `json:"hash"`
	ParentHash   common.Hash     `json:"parentHash"`
	Timestamp    hexutil.Uint64  `json:"timestamp"`
	Miner        common.Address  `json:"miner"`
	BaseFee      *hexutil.Big    `json:"baseFeePerGas"`
	Transactions []rpcTx         `json:"transactions"`
	Withdrawals  []rpcWithdrawal `json:"withdrawals"`
}

type rpcTx struct {
	Hash             common.Hash     `json:"hash"`
	From             common.Address  `json:"from"`
	To               *common.Address `json:"to"`
	Value            *hexutil.Big    `json:"value"`
	Nonce            hexutil.Uint64  `json:"nonce"`
	TransactionIndex hexutil.Uint64  `json:"transactionIndex"`
	Type             hexutil.Uint64  `json:"type"`
	Gas              hexutil.Uint64  `json:"gas"`
	Input            hexutil.Bytes   `json:"input"`
}

type rpcWithdrawal struct {
	Index   hexutil.Uint64 `json:"index"`
	Address common.Address `json:"address"`
	Amount  hexutil.Uint64 `json:"amount"` // gwei
}

// Blocks returns blocks from to to with their transactions, batched
// eth_getBlockByNumber calls; it stops at the first block the node lacks.
func (s *Source) Blocks(ctx context.Context, from, to uint64) ([]query.SourceBlock, error) {
	if to < from {
		return nil, nil
	}
	var out []query.SourceBlock
	for lo := from; lo <= to; lo += uint64(s.cfg.BlockBatchSize) {
		hi := min(to, lo+uint64(s.cfg.BlockBatchSize)-1)
		res := make([]*rpcBlock, hi-lo+1)
		batch := make([]rpc.BatchElem, len(res))
		for i := range batch {
			batch[i] = rpc.BatchElem{
				Method: "eth_getBlockByNumber",
				Args:   []any{hexutil.EncodeUint64(lo + uint64(i)), true},
				Result: &res[i],
			}
		}
		if err := s.batch(ctx, batch); err != nil {
			return out, err
		}
		for i, b := range res {
			if batch[i].Error != nil {
				return out, s.unavailable(ctx, "eth_getBlockByNumber", batch[i].Error)
			}
			if b == nil {
				return out, nil
			}
			if uint64(b.Number) != lo+uint64(i) {
				return out, fmt.Errorf("eth_getBlockByNumber %d: node answered block %d: %w", lo+uint64(i), b.Number, query.ErrUnavailable)
			}
			out = append(out, convertBlock(b))
		}
	}
	return out, nil
}

func convertBlock(b *rpcBlock) query.SourceBlock {
	sb := query.SourceBlock{
		Block: query.Block{
			Number:     uint64(b.Number),
			Hash:       hexLower(b.Hash),
			ParentHash: hexLower(b.ParentHash),
			Time:       time.Unix(int64(b.Timestamp), 0).UTC(),
		},
		Txs:   make([]query.SourceTx, len(b.Transactions)),
		Miner: addrLower(b.Miner),
	}
	if b.BaseFee != nil {
		sb.BaseFee = b.BaseFee.ToInt().String()
	}
	for _, w := range b.Withdrawals {
		wei := new(big.Int).Mul(new(big.Int).SetUint64(uint64(w.Amount)), big.NewInt(params.GWei))
		sb.Withdrawals = append(sb.Withdrawals, query.Withdrawal{Index: uint64(w.Index), Address: addrLower(w.Address), Amount: wei.String()})
	}
	for i, t := range b.Transactions {
		tx := query.SourceTx{
			Hash:     hexLower(t.Hash),
			Index:    uint(t.TransactionIndex),
			From:     addrLower(t.From),
			Value:    "0",
			Nonce:    uint64(t.Nonce),
			Type:     uint8(t.Type),
			GasLimit: uint64(t.Gas),
		}
		if len(t.Input) >= 4 {
			tx.Method = hexutil.Encode(t.Input[:4])
		}
		if t.To != nil {
			tx.To = addrLower(*t.To)
		} else {
			tx.Created = addrLower(crypto.CreateAddress(t.From, uint64(t.Nonce)))
		}
		if t.Value != nil {
			tx.Value = t.Value.ToInt().String()
		}
		sb.Txs[i] = tx
	}
	return sb
}

// Transfers returns the ERC-20 Transfer logs of blocks from to to. With
// addresses nil it is one eth_getLogs on the Transfer topic alone (the
// cost of a block, whatever the number of subscriptions); otherwise two
// per range, with the addresses as the from and the to topic, in ranges
// that start at LogRange blocks and adapt to the node's limits: halved
// when it refuses a range as too large or a result as too big, grown back
// after ranges it answers, up to MaxLogRange.
func (s *Source) Transfers(ctx context.Context, from, to uint64, addresses []string) ([]query.TokenTransfer, error) {
	if to < from {
		return nil, nil
	}
	if addresses == nil {
		return s.filterTransfers(ctx, ethereum.FilterQuery{
			FromBlock: new(big.Int).SetUint64(from),
			ToBlock:   new(big.Int).SetUint64(to),
			Topics:    [][]common.Hash{{transferTopic}},
		})
	}
	if len(addresses) == 0 {
		return nil, nil
	}
	all := make([]common.Hash, len(addresses))
	for i, a := range addresses {
		all[i] = common.BytesToHash(common.HexToAddress(a).Bytes())
	}
	var out []query.TokenTransfer
	seen := make(map[[2]uint64]bool)
	keep := func(got []query.TokenTransfer) {
		for _, tt := range got {
			k := [2]uint64{tt.BlockNumber, uint64(tt.LogIndex)}
			if !seen[k] {
				seen[k] = true
				out = append(out, tt)
			}
		}
	}
	// geth refuses more than 1000 alternatives for one topic.
	for topics := range slices.Chunk(all, 500) {
		for _, t := range [][][]common.Hash{{{transferTopic}, topics}, {{transferTopic}, nil, topics}} {
			s.spanMu.Lock()
			span := s.span
			s.spanMu.Unlock()
			err := s.walkLogs(ctx, &span, from, to, t, keep)
			s.spanMu.Lock()
			s.span = span
			s.spanMu.Unlock()
			if err != nil {
				return nil, err
			}
		}
	}
	slices.SortFunc(out, func(a, b query.TokenTransfer) int {
		if a.BlockNumber != b.BlockNumber {
			return cmp.Compare(a.BlockNumber, b.BlockNumber)
		}
		return a.LogIndex - b.LogIndex
	})
	return out, nil
}

func (s *Source) filterTransfers(ctx context.Context, q ethereum.FilterQuery) ([]query.TokenTransfer, error) {
	logs, err := s.eth.FilterLogs(ctx, q)
	if err != nil {
		return nil, s.unavailable(ctx, "eth_getLogs", err)
	}
	out := make([]query.TokenTransfer, 0, len(logs))
	for i := range logs {
		if t, ok := transferOf(&logs[i]); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// transferOf reads an ERC-20 Transfer log.
func transferOf(l *types.Log) (query.TokenTransfer, bool) {
	// ERC-721 Transfer has the same topic 0 but a third indexed topic.
	// From Amsterdam on, moves of ether are logged the same way by the
	// system address (EIP-7708): those are native, not ERC-20.
	if l.Removed || len(l.Topics) != 3 || l.Topics[0] != transferTopic || len(l.Data) != 32 || l.Address == params.SystemAddress {
		return query.TokenTransfer{}, false
	}
	return query.TokenTransfer{
		BlockNumber: l.BlockNumber,
		BlockHash:   hexLower(l.BlockHash),
		TxHash:      hexLower(l.TxHash),
		TxIndex:     l.TxIndex,
		LogIndex:    int(l.Index),
		Contract:    addrLower(l.Address),
		From:        addrLower(common.BytesToAddress(l.Topics[1].Bytes())),
		To:          addrLower(common.BytesToAddress(l.Topics[2].Bytes())),
		Amount:      new(big.Int).SetBytes(l.Data).String(),
	}, true
}

type rpcReceipt struct {
	TransactionHash   common.Hash    `json:"transactionHash"`
	BlockHash         common.Hash    `json:"blockHash"`
	Status            hexutil.Uint64 `json:"status"`
	GasUsed           hexutil.Uint64 `json:"gasUsed"`
	EffectiveGasPrice *hexutil.Big   `json:"effectiveGasPrice"`
	BlobGasUsed       hexutil.Uint64 `json:"blobGasUsed"`
	BlobGasPrice      *hexutil.Big   `json:"blobGasPrice"`
	Logs              []*types.Log   `json:"logs"`
}

// receipt converts what the fetcher keeps of r. The fee is what the
// sender's balance lost beyond the value: gas, and blob gas for a blob
// transaction.
func (r *rpcReceipt) receipt() query.Receipt {
	price := new(big.Int)
	if r.EffectiveGasPrice != nil {
		price = r.EffectiveGasPrice.ToInt()
	}
	fee := new(big.Int).Mul(new(big.Int).SetUint64(uint64(r.GasUsed)), price)
	if r.BlobGasPrice != nil {
		fee.Add(fee, new(big.Int).Mul(new(big.Int).SetUint64(uint64(r.BlobGasUsed)), r.BlobGasPrice.ToInt()))
	}
	status := query.StatusFailed
	if r.Status == hexutil.Uint64(types.ReceiptStatusSuccessful) {
		status = query.StatusSuccess
	}
	return query.Receipt{TxHash: hexLower(r.TransactionHash), Status: status, Fee: fee.String(),
		GasUsed: uint64(r.GasUsed), EffectiveGasPrice: price.String()}
}

// BlockReceipts returns every receipt of block b and the ERC-20 Transfer
// logs in them, from one eth_getBlockReceipts.
func (s *Source) BlockReceipts(ctx context.Context, b query.Block) ([]query.Receipt, []query.TokenTransfer, error) {
	var all []*rpcReceipt
	if err := s.rpc.CallContext(ctx, &all, "eth_getBlockReceipts", b.Hash); err != nil {
		return nil, nil, s.unavailable(ctx, "eth_getBlockReceipts", err)
	}
	out := make([]query.Receipt, 0, len(all))
	var transfers []query.TokenTransfer
	for _, r := range all {
		if r == nil || hexLower(r.BlockHash) != b.Hash {
			return nil, nil, fmt.Errorf("receipts of block %d %s: %w", b.Number, b.Hash, query.ErrNotFound)
		}
		out = append(out, r.receipt())
		for _, l := range r.Logs {
			if t, ok := transferOf(l); ok {
				transfers = append(transfers, t)
			}
		}
	}
	return out, transfers, nil
}

// Receipts returns the receipts of hashes in block b: one
// eth_getBlockReceipts when many of the block's transactions matched,
// else batched eth_getTransactionReceipt.
func (s *Source) Receipts(ctx context.Context, b query.Block, hashes []string) ([]query.Receipt, error) {
	if len(hashes) == 0 {
		return nil, nil
	}
	byHash := make(map[string]*rpcReceipt, len(hashes))
	if len(hashes) >= s.cfg.BlockReceiptsFrom {
		var all []*rpcReceipt
		if err := s.rpc.CallContext(ctx, &all, "eth_getBlockReceipts", b.Hash); err != nil {
			return nil, s.unavailable(ctx, "eth_getBlockReceipts", err)
		}
		for _, r := range all {
			if r != nil {
				byHash[hexLower(r.TransactionHash)] = r
			}
		}
	} else {
		res := make([]*rpcReceipt, len(hashes))
		batch := make([]rpc.BatchElem, len(hashes))
		for i, h := range hashes {
			batch[i] = rpc.BatchElem{Method: "eth_getTransactionReceipt", Args: []any{h}, Result: &res[i]}
		}
		if err := s.batch(ctx, batch); err != nil {
			return nil, err
		}
		for i, r := range res {
			if batch[i].Error != nil {
				return nil, s.unavailable(ctx, "eth_getTransactionReceipt", batch[i].Error)
			}
			if r != nil {
				byHash[hashes[i]] = r
			}
		}
	}
	out := make([]query.Receipt, len(hashes))
	for i, h := range hashes {
		r := byHash[h]
		if r == nil || hexLower(r.BlockHash) != b.Hash {
			return nil, fmt.Errorf("receipt of %s in block %d %s: %w", h, b.Number, b.Hash, query.ErrNotFound)
		}
		out[i] = r.receipt()
		out[i].TxHash = h
	}
	return out, nil
}

type callArgs struct {
	To   common.Address `json:"to"`
	Data hexutil.Bytes  `json:"input"`
}

// Balances reads native balances (eth_getBalance) and ERC-20 balances
// (balanceOf through eth_call) at block, batched; a token's symbol and
// decimals are read on first sight and cached. A token whose calls revert
// is left out of the result rather than failing the others. Errors:
// query.ErrNoState when the node keeps no state for block (pruned).
func (s *Source) Balances(ctx context.Context, block uint64, queries []query.BalanceQuery) ([]query.Balance, error) {
	if err := s.readTokenMeta(ctx, queries); err != nil {
		return nil, err
	}
	at := hexutil.EncodeUint64(block)
	type result struct {
		native hexutil.Big
		call   hexutil.Bytes
	}
	res := make([]result, len(queries))
	batch := make([]rpc.BatchElem, len(queries))
	for i, q := range queries {
		addr := common.HexToAddress(q.Address)
		if q.Contract == "" {
			batch[i] = rpc.BatchElem{Method: "eth_getBalance", Args: []any{addr, at}, Result: &res[i].native}
			continue
		}
		data := append(slices.Clone(selBalanceOf), common.LeftPadBytes(addr.Bytes(), 32)...)
		batch[i] = rpc.BatchElem{Method: "eth_call", Args: []any{callArgs{To: common.HexToAddress(q.Contract), Data: data}, at}, Result: &res[i].call}
	}
	if err := s.batch(ctx, batch); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]query.Balance, 0, len(queries))
	for i, q := range queries {
		b := query.Balance{Address: strings.ToLower(q.Address), Asset: query.AssetNative, Symbol: "ETH", Decimals: 18, Block: block}
		if err := batch[i].Error; err != nil {
			if noState(err) {
				return nil, fmt.Errorf("%s at block %d: %w: %w", batch[i].Method, block, query.ErrNoState, s.nodeErr(err))
			}
			if q.Contract != "" && reverted(err) {
				continue
			}
			return nil, s.unavailable(ctx, batch[i].Method, err)
		}
		if q.Contract == "" {
			b.Amount = res[i].native.ToInt().String()
		} else {
			if len(res[i].call) < 32 {
				continue // not an ERC-20 balanceOf answer
			}
			meta := s.tokens[common.HexToAddress(q.Contract)]
			b.Asset, b.Contract, b.Symbol, b.Decimals = query.AssetERC20, strings.ToLower(q.Contract), meta.symbol, meta.decimals
			b.Amount = new(big.Int).SetBytes(res[i].call[:32]).String()
		}
		out = append(out, b)
	}
	return out, nil
}

// readTokenMeta reads symbol and decimals of the tokens of queries not
// seen before, in one batch.
func (s *Source) readTokenMeta(ctx context.Context, queries []query.BalanceQuery) error {
	s.mu.Lock()
	var todo []common.Address
	for _, q := range queries {
		if q.Contract == "" {
			continue
		}
		c := common.HexToAddress(q.Contract)
		if _, ok := s.tokens[c]; !ok && !slices.Contains(todo, c) {
			todo = append(todo, c)
		}
	}
	s.mu.Unlock()
	if len(todo) == 0 {
		return nil
	}
	res := make([]hexutil.Bytes, 2*len(todo))
	batch := make([]rpc.BatchElem, 2*len(todo))
	for i, c := range todo {
		batch[2*i] = rpc.BatchElem{Method: "eth_call", Args: []any{callArgs{To: c, Data: selSymbol}, "latest"}, Result: &res[2*i]}
		batch[2*i+1] = rpc.BatchElem{Method: "eth_call", Args: []any{callArgs{To: c, Data: selDecimals}, "latest"}, Result: &res[2*i+1]}
	}
	if err := s.batch(ctx, batch); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range todo {
		var m tokenMeta
		for j := 2 * i; j <= 2*i+1; j++ {
			if err := batch[j].Error; err != nil && !reverted(err) {
				return s.unavailable(ctx, "eth_call", err)
			}
		}
		if batch[2*i].Error == nil {
			m.symbol = decodeSymbol(res[2*i])
		}
		if batch[2*i+1].Error == nil && len(res[2*i+1]) >= 32 {
			if d := new(big.Int).SetBytes(res[2*i+1][:32]); d.IsUint64() && d.Uint64() <= 255 {
				m.decimals = int(d.Uint64())
			}
		}
		s.tokens[c] = m
	}
	return nil
}

// Token returns the symbol and decimals of the ERC-20 at contract, read
// once and cached.
func (s *Source) Token(ctx context.Context, contract string) (string, int, error) {
	if contract == "" {
		return "ETH", 18, nil // as Balances says of the native coin
	}
	if err := s.readTokenMeta(ctx, []query.BalanceQuery{{Contract: contract}}); err != nil {
		return "", 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.tokens[common.HexToAddress(contract)]
	return m.symbol, m.decimals, nil
}

// decodeSymbol decodes an ABI string, or the bytes32 some old tokens return.
func decodeSymbol(b []byte) string {
	if len(b) == 32 {
		return string(bytes.TrimRight(b, "\x00"))
	}
	if len(b) < 64 {
		return ""
	}
	off := new(big.Int).SetBytes(b[:32])
	if !off.IsUint64() || off.Uint64()+32 > uint64(len(b)) {
		return ""
	}
	o := off.Uint64()
	n := new(big.Int).SetBytes(b[o : o+32])
	if !n.IsUint64() || o+32+n.Uint64() > uint64(len(b)) {
		return ""
	}
	return strings.ToValidUTF8(string(b[o+32:o+32+n.Uint64()]), "")
}

// batch sends calls in batches of at most BatchSize. Errors of single
// calls are left in their BatchElem for the caller.
func (s *Source) batch(ctx context.Context, calls []rpc.BatchElem) error {
	for lo := 0; lo < len(calls); lo += s.cfg.BatchSize {
		hi := min(len(calls), lo+s.cfg.BatchSize)
		if err := s.rpc.BatchCallContext(ctx, calls[lo:hi]); err != nil {
			return s.unavailable(ctx, "batch of "+calls[lo].Method, err)
		}
	}
	return nil
}

// reverted reports whether a call failed in the EVM (a revert, an
// invalid opcode, no code) rather than in the node.
func reverted(err error) bool {
	var de rpc.DataError
	if errors.As(err, &de) {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "revert") || strings.Contains(msg, "invalid opcode") || strings.Contains(msg, "execution")
}

// unavailable wraps a node error as query.ErrUnavailable, except when the
// caller's own context ended, which is not the node's fault.
func (s *Source) unavailable(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	return fmt.Errorf("%s: %w: %w", op, query.ErrUnavailable, s.nodeErr(err))
}

// nodeErr is err shown as its short reason, scrubbed of the URL's secrets.
func (s *Source) nodeErr(err error) error { return &nodeError{reason(err, s.secrets), err} }

func hexLower(h common.Hash) string     { return h.Hex() } // already lowercase
func addrLower(a common.Address) string { return strings.ToLower(a.Hex()) }
