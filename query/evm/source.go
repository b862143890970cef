package evm

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

// Topic 0 of the token transfer events: an ERC-20 (and ERC-721)
// Transfer, ERC-1155 TransferSingle and TransferBatch.
var (
	transferTopic       = crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))
	transferSingleTopic = crypto.Keccak256Hash([]byte("TransferSingle(address,address,address,uint256,uint256)"))
	transferBatchTopic  = crypto.Keccak256Hash([]byte("TransferBatch(address,address,address,uint256[],uint256[])"))
)

// Function selectors of the token reads.
var (
	selBalanceOf         = hexutil.MustDecode("0x70a08231") // balanceOf(address): ERC-20 amount, ERC-721 count
	selBalanceOfID       = hexutil.MustDecode("0x00fdd58e") // balanceOf(address,uint256): ERC-1155
	selSymbol            = hexutil.MustDecode("0x95d89b41")
	selName              = hexutil.MustDecode("0x06fdde03")
	selDecimals          = hexutil.MustDecode("0x313ce567")
	selSupportsInterface = hexutil.MustDecode("0x01ffc9a7") // ERC-165
	// erc721Interface is ERC-721's ERC-165 interface id, as the argument
	// of supportsInterface (bytes4, left-aligned in its word).
	erc721Interface = common.RightPadBytes(hexutil.MustDecode("0x80ac58cd"), 32)
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
	tokens map[common.Address]tokenMeta // symbol, name, decimals, read once
	nfts   map[common.Address]bool      // contracts seen logging ERC-721 Transfers

	spanMu sync.Mutex
	span   logSpan // width of filtered eth_getLogs ranges

	// secrets are the secret parts of the node's URL, scrubbed from any
	// text the node sends before it is part of an error (node.go).
	secrets secrets
}

type tokenMeta struct {
	query.TokenMeta
	erc721 bool // supportsInterface says ERC-721
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
		nfts: make(map[common.Address]bool),
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
	Mint             *hexutil.Big    `json:"mint"` // an OP-stack deposit's
}

type rpcWithdrawal struct {
	Index     hexutil.Uint64 `json:"index"`
	Validator hexutil.Uint64 `json:"validatorIndex"`
	Address   common.Address `json:"address"`
	Amount    hexutil.Uint64 `json:"amount"` // gwei
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
		sb.BaseFee = query.AmountFromBig(b.BaseFee.ToInt())
	}
	for _, w := range b.Withdrawals {
		wei := new(big.Int).Mul(new(big.Int).SetUint64(uint64(w.Amount)), big.NewInt(params.GWei))
		sb.Withdrawals = append(sb.Withdrawals, query.Withdrawal{Index: uint64(w.Index), Validator: uint64(w.Validator),
			Address: addrLower(w.Address), Amount: query.AmountFromBig(wei)})
	}
	for i, t := range b.Transactions {
		tx := query.SourceTx{
			Hash:     hexLower(t.Hash),
			Index:    uint(t.TransactionIndex),
			From:     addrLower(t.From),
			Nonce:    uint64(t.Nonce),
			Type:     uint8(t.Type),
			GasLimit: uint64(t.Gas),
			Input:    t.Input,
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
			tx.Value = query.AmountFromBig(t.Value.ToInt())
		}
		if t.Type == depositTxType {
			if t.Mint != nil {
				tx.Mint = query.AmountFromBig(t.Mint.ToInt())
			}
			tx.System = t.From == l1InfoDepositor
		}
		sb.Txs[i] = tx
	}
	return sb
}

// Transfers returns the token transfer logs of blocks from to to. With
// addresses nil it is one eth_getLogs on the three transfer topics alone
// (the cost of a block, whatever the number of subscriptions); otherwise
// three per range, with the addresses as the from and the to topic
// (topics 1 and 2 of a Transfer, 2 and 3 of an ERC-1155 event: the
// Transfer's to and the ERC-1155 from share one query), in ranges
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
			Topics:    [][]common.Hash{{transferTopic, transferSingleTopic, transferBatchTopic}},
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
	seen := make(map[[2]uint64]bool) // logs kept by earlier queries
	keep := func(got []query.TokenTransfer) {
		// A batch log gives several transfers with its index: keep or
		// drop them together.
		now := make(map[[2]uint64]bool)
		for _, tt := range got {
			k := [2]uint64{tt.BlockNumber, uint64(tt.LogIndex)}
			if !seen[k] {
				now[k] = true
				out = append(out, tt)
			}
		}
		for k := range now {
			seen[k] = true
		}
	}
	erc1155 := []common.Hash{transferSingleTopic, transferBatchTopic}
	both := []common.Hash{transferTopic, transferSingleTopic, transferBatchTopic}
	// geth refuses more than 1000 alternatives for one topic.
	for topics := range slices.Chunk(all, 500) {
		for _, t := range [][][]common.Hash{{{transferTopic}, topics}, {both, nil, topics}, {erc1155, nil, nil, topics}} {
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
		out = appendTransfers(out, &logs[i])
	}
	s.noteNFTs(out)
	return out, nil
}

// noteNFTs remembers the contracts of ERC-721 transfers: their balances
// are counts of tokens (Balances), whether or not they answer ERC-165.
func (s *Source) noteNFTs(ts []query.TokenTransfer) {
	var first int
	for first = 0; first < len(ts) && ts[first].Asset != query.AssetERC721; first++ {
	}
	if first == len(ts) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range ts[first:] {
		if t.Asset == query.AssetERC721 {
			s.nfts[common.HexToAddress(t.Contract)] = true
		}
	}
}

// appendTransfers appends the token transfers of log l: an ERC-20
// Transfer (three topics, the amount in the data), an ERC-721 Transfer
// (four topics, the id the fourth), an ERC-1155 TransferSingle (id and
// value in the data) or TransferBatch (one transfer an id, in order, all
// with the log's index). Other logs, and malformed ones, add nothing.
func appendTransfers(out []query.TokenTransfer, l *types.Log) []query.TokenTransfer {
	// From Amsterdam on, moves of ether are logged as Transfers by the
	// system address (EIP-7708): those are native, not tokens.
	if l.Removed || len(l.Topics) < 3 || l.Address == params.SystemAddress {
		return out
	}
	t := query.TokenTransfer{
		BlockNumber: l.BlockNumber,
		BlockHash:   hexLower(l.BlockHash),
		TxHash:      hexLower(l.TxHash),
		TxIndex:     l.TxIndex,
		LogIndex:    int(l.Index),
		Contract:    addrLower(l.Address),
	}
	word := func(b []byte, i int) *big.Int { return new(big.Int).SetBytes(b[32*i : 32*i+32]) }
	switch l.Topics[0] {
	case transferTopic:
		t.From = addrLower(common.BytesToAddress(l.Topics[1].Bytes()))
		t.To = addrLower(common.BytesToAddress(l.Topics[2].Bytes()))
		switch {
		case len(l.Topics) == 3 && len(l.Data) == 32:
			t.Asset, t.Amount = query.AssetERC20, query.AmountFromBig(word(l.Data, 0))
		case len(l.Topics) == 4 && len(l.Data) == 0:
			t.Asset, t.Amount, t.TokenID = query.AssetERC721, query.AmountOf(1), l.Topics[3].Big().String()
		default:
			return out
		}
		return append(out, t)
	case transferSingleTopic, transferBatchTopic:
		if len(l.Topics) != 4 {
			return out
		}
		t.Asset = query.AssetERC1155
		t.From = addrLower(common.BytesToAddress(l.Topics[2].Bytes()))
		t.To = addrLower(common.BytesToAddress(l.Topics[3].Bytes()))
		if l.Topics[0] == transferSingleTopic {
			if len(l.Data) != 64 {
				return out
			}
			t.TokenID, t.Amount = word(l.Data, 0).String(), query.AmountFromBig(word(l.Data, 1))
			return append(out, t)
		}
		ids, ok1 := abiWords(l.Data, 0)
		values, ok2 := abiWords(l.Data, 1)
		if !ok1 || !ok2 || len(ids) != len(values) {
			return out
		}
		for i := range ids {
			t.TokenID, t.Amount = ids[i].String(), query.AmountFromBig(values[i])
			out = append(out, t)
		}
	}
	return out
}

// abiWords decodes the uint256[] that is argument i of ABI-encoded data;
// false when data does not hold one.
func abiWords(data []byte, i int) ([]*big.Int, bool) {
	if len(data) < 32*(i+1) {
		return nil, false
	}
	off := new(big.Int).SetBytes(data[32*i : 32*i+32])
	if !off.IsUint64() || off.Uint64()%32 != 0 || off.Uint64()+32 > uint64(len(data)) {
		return nil, false
	}
	o := off.Uint64()
	n := new(big.Int).SetBytes(data[o : o+32])
	if !n.IsUint64() || n.Uint64() > (uint64(len(data))-o-32)/32 {
		return nil, false
	}
	out := make([]*big.Int, n.Uint64())
	for j := range out {
		at := o + 32 + 32*uint64(j)
		out[j] = new(big.Int).SetBytes(data[at : at+32])
	}
	return out, true
}

type rpcReceipt struct {
	TransactionHash   common.Hash    `json:"transactionHash"`
	Type              hexutil.Uint64 `json:"type"`
	BlockHash         common.Hash    `json:"blockHash"`
	Status            hexutil.Uint64 `json:"status"`
	GasUsed           hexutil.Uint64 `json:"gasUsed"`
	CumulativeGasUsed hexutil.Uint64 `json:"cumulativeGasUsed"`
	EffectiveGasPrice *hexutil.Big   `json:"effectiveGasPrice"`
	BlobGasUsed       hexutil.Uint64 `json:"blobGasUsed"`
	BlobGasPrice      *hexutil.Big   `json:"blobGasPrice"`
	Logs              []*types.Log   `json:"logs"`
	rollupFees
}

// receipt converts what the fetcher keeps of r. The fee is what the
// sender's balance lost beyond the value (fee.go): execution, blob gas,
// and a rollup's L1 data fee and operator fee; an OP-stack deposit pays
// nothing.
func (r *rpcReceipt) receipt() query.Receipt {
	price := new(big.Int)
	if r.EffectiveGasPrice != nil {
		price = r.EffectiveGasPrice.ToInt()
	}
	status := query.StatusFailed
	if r.Status == hexutil.Uint64(types.ReceiptStatusSuccessful) {
		status = query.StatusSuccess
	}
	out := query.Receipt{TxHash: hexLower(r.TransactionHash), Status: status,
		GasUsed: uint64(r.GasUsed), EffectiveGasPrice: query.AmountFromBig(price), CumulativeGasUsed: uint64(r.CumulativeGasUsed)}
	if r.Type == depositTxType {
		return out
	}
	out.FeeParts.Execution = query.AmountFromBig(new(big.Int).Mul(new(big.Int).SetUint64(uint64(r.GasUsed)), price))
	if r.BlobGasPrice != nil {
		out.FeeParts.Blob = query.AmountFromBig(new(big.Int).Mul(new(big.Int).SetUint64(uint64(r.BlobGasUsed)), r.BlobGasPrice.ToInt()))
	}
	out.FeeParts.L1, out.FeeParts.Operator = r.rollupFees.parts(uint64(r.GasUsed))
	out.Fee = out.FeeParts.Sum()
	return out
}

// BlockReceipts returns every receipt of block b and the token transfer
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
			transfers = appendTransfers(transfers, l)
		}
	}
	s.noteNFTs(transfers)
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

// Balances reads native balances (eth_getBalance) and token balances
// (balanceOf through eth_call: balanceOf(address) of an ERC-20 or
// ERC-721 contract, balanceOf(address, id) of an ERC-1155 contract/id)
// at block, batched; a token's symbol, name and decimals are read on
// first sight and cached. A contract is an ERC-721 (its balance a count
// of tokens) when it logged an ERC-721 Transfer here or says so through
// ERC-165. A token whose calls revert is left out of the result rather
// than failing the others. Errors: query.ErrNoState when the node keeps
// no state for block (pruned).
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
		contract, id := query.SplitHoldingKey(q.Contract)
		var data []byte
		if id == "" {
			data = append(slices.Clone(selBalanceOf), common.LeftPadBytes(addr.Bytes(), 32)...)
		} else {
			n, ok := new(big.Int).SetString(id, 10)
			if !ok || n.Sign() < 0 || n.BitLen() > 256 {
				return nil, fmt.Errorf("balance of %s: token id %q is not a uint256", q.Contract, id)
			}
			data = append(slices.Clone(selBalanceOfID), common.LeftPadBytes(addr.Bytes(), 32)...)
			data = append(data, common.LeftPadBytes(n.Bytes(), 32)...)
		}
		batch[i] = rpc.BatchElem{Method: "eth_call", Args: []any{callArgs{To: common.HexToAddress(contract), Data: data}, at}, Result: &res[i].call}
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
			b.Amount = query.AmountFromBig(res[i].native.ToInt())
		} else {
			if len(res[i].call) < 32 {
				continue // not an ERC-20 balanceOf answer
			}
			contract, id := query.SplitHoldingKey(q.Contract)
			c := common.HexToAddress(contract)
			meta := s.tokens[c]
			b.Asset = query.AssetERC20
			switch {
			case id != "":
				b.Asset = query.AssetERC1155
			case meta.erc721 || s.nfts[c]:
				b.Asset = query.AssetERC721
			}
			b.Contract, b.Symbol, b.Name, b.Decimals = strings.ToLower(q.Contract), meta.Symbol, meta.Name, meta.Decimals
			b.Amount = query.AmountFromBig(new(big.Int).SetBytes(res[i].call[:32]))
		}
		out = append(out, b)
	}
	return out, nil
}

// readTokenMeta reads symbol, name, decimals and ERC-165 support of
// ERC-721 of the tokens of queries not seen before, in one batch.
func (s *Source) readTokenMeta(ctx context.Context, queries []query.BalanceQuery) error {
	s.mu.Lock()
	var todo []common.Address
	for _, q := range queries {
		if q.Contract == "" {
			continue
		}
		contract, _ := query.SplitHoldingKey(q.Contract)
		c := common.HexToAddress(contract)
		if _, ok := s.tokens[c]; !ok && !slices.Contains(todo, c) {
			todo = append(todo, c)
		}
	}
	s.mu.Unlock()
	if len(todo) == 0 {
		return nil
	}
	calls := [][]byte{selSymbol, selName, selDecimals, append(slices.Clone(selSupportsInterface), erc721Interface...)}
	k := len(calls)
	res := make([]hexutil.Bytes, k*len(todo))
	batch := make([]rpc.BatchElem, k*len(todo))
	for i, c := range todo {
		for j, data := range calls {
			batch[k*i+j] = rpc.BatchElem{Method: "eth_call", Args: []any{callArgs{To: c, Data: data}, "latest"}, Result: &res[k*i+j]}
		}
	}
	if err := s.batch(ctx, batch); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range todo {
		var m tokenMeta
		answer := func(j int) []byte {
			if batch[k*i+j].Error != nil {
				return nil
			}
			return res[k*i+j]
		}
		for j := range calls {
			if err := batch[k*i+j].Error; err != nil && !reverted(err) {
				return s.unavailable(ctx, "eth_call", err)
			}
		}
		m.Symbol, m.Name = decodeSymbol(answer(0), query.MaxSymbol), decodeSymbol(answer(1), query.MaxName)
		if d := answer(2); len(d) >= 32 {
			if n := new(big.Int).SetBytes(d[:32]); n.IsUint64() && n.Uint64() <= 255 {
				m.Decimals = int(n.Uint64())
			}
		}
		// A contract without ERC-165 may answer anything, or nothing: only
		// an exact true (one word, 1) counts.
		if d := answer(3); len(d) == 32 && new(big.Int).SetBytes(d).Cmp(big.NewInt(1)) == 0 {
			m.erc721 = true
		}
		s.tokens[c] = m
	}
	return nil
}

// Token returns the symbol, name and decimals of the token at contract,
// read once and cached.
func (s *Source) Token(ctx context.Context, contract string) (query.TokenMeta, error) {
	if contract == "" {
		return query.TokenMeta{Symbol: "ETH", Decimals: 18}, nil // as Balances says of the native coin
	}
	if err := s.readTokenMeta(ctx, []query.BalanceQuery{{Contract: contract}}); err != nil {
		return query.TokenMeta{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens[common.HexToAddress(contract)].TokenMeta, nil
}

// decodeSymbol decodes an ABI string, or the bytes32 some old tokens
// return (a symbol or a name), as query.ChainText of at most max
// characters: a contract may answer anything; "" when it is neither.
func decodeSymbol(b []byte, max int) string {
	if len(b) == 32 {
		return query.ChainText(string(bytes.TrimRight(b, "\x00")), max)
	}
	s, ok := abiBytes(b)
	if !ok {
		return ""
	}
	return query.ChainText(string(s), max)
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
