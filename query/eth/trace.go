package eth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/wharfhq/wharf/query"
)

var _ query.Tracer = (*Source)(nil)

// traceTimeout is the tracer's own time limit for a block, passed to
// debug_traceBlockByNumber (the HTTP timeout of the Source bounds the call).
const traceTimeout = 20 * time.Second

// ProbeTraces finds the node's trace API by asking for the traces of its
// latest block: geth's debug_traceBlockByNumber with the built-in
// callTracer first, then trace_block (Erigon, Nethermind, Reth). A method
// that answers, even with an error of its own (the genesis block cannot
// be traced), is there; a node that serves neither (method not found or
// not enabled) has none: "" and no error. A node that cannot be reached
// is an error, to try again.
func (s *Source) ProbeTraces(ctx context.Context) (string, error) {
	head, err := s.Head(ctx)
	if err != nil {
		return "", err
	}
	at := hexutil.EncodeUint64(head)
	for _, api := range []string{query.TraceCallTracer, query.TraceParity} {
		args := []any{at}
		if api == query.TraceCallTracer {
			args = append(args, callTracerConfig())
		}
		var raw any
		err := s.rpc.CallContext(ctx, &raw, api, args...)
		var re rpc.Error
		switch {
		case err == nil:
			return api, nil
		case noMethod(err):
			continue
		case errors.As(err, &re):
			return api, nil
		}
		return "", s.unavailable(ctx, api, err)
	}
	return "", nil
}

// noMethod reports whether err says the node does not serve the method.
func noMethod(err error) bool {
	var re rpc.Error
	if errors.As(err, &re) && re.ErrorCode() == -32601 {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "does not exist") || strings.Contains(msg, "not available") ||
		strings.Contains(msg, "method not found") || strings.Contains(msg, "not supported")
}

func callTracerConfig() map[string]any {
	return map[string]any{"tracer": "callTracer", "timeout": traceTimeout.String()}
}

// Traces returns the internal movements of value in block b's
// transactions through api (query.TraceCallTracer or query.TraceParity).
func (s *Source) Traces(ctx context.Context, b query.SourceBlock, api string) ([]query.InternalMove, error) {
	if len(b.Txs) == 0 {
		return nil, nil
	}
	switch api {
	case query.TraceCallTracer:
		return s.callTraces(ctx, b)
	case query.TraceParity:
		return s.parityTraces(ctx, b)
	}
	return nil, fmt.Errorf("traces: unknown trace API %q", api)
}

// callFrame is a frame of geth's callTracer.
type callFrame struct {
	Type  string          `json:"type"`
	From  common.Address  `json:"from"`
	To    *common.Address `json:"to"`
	Value *hexutil.Big    `json:"value"`
	Error string          `json:"error"`
	Calls []callFrame     `json:"calls"`
}

type txTrace struct {
	TxHash common.Hash `json:"txHash"`
	Result *callFrame  `json:"result"`
	Error  string      `json:"error"`
}

func (s *Source) callTraces(ctx context.Context, b query.SourceBlock) ([]query.InternalMove, error) {
	var res []txTrace
	if err := s.rpc.CallContext(ctx, &res, "debug_traceBlockByNumber", hexutil.EncodeUint64(b.Number), callTracerConfig()); err != nil {
		return nil, s.unavailable(ctx, "debug_traceBlockByNumber", err)
	}
	// The block traced is the one read only if it holds the same
	// transactions: otherwise the chain moved in between.
	if len(res) != len(b.Txs) {
		return nil, fmt.Errorf("traces of block %d %s: %d traces for %d transactions: %w", b.Number, b.Hash, len(res), len(b.Txs), query.ErrNotFound)
	}
	var out []query.InternalMove
	for i, t := range res {
		hash := b.Txs[i].Hash
		if t.TxHash != (common.Hash{}) && hexLower(t.TxHash) != hash {
			return nil, fmt.Errorf("traces of block %d %s: transaction %d is %s, not %s: %w", b.Number, b.Hash, i, hexLower(t.TxHash), hash, query.ErrNotFound)
		}
		if t.Error != "" || t.Result == nil {
			return nil, fmt.Errorf("trace of %s in block %d: %s: %w", hash, b.Number, s.secrets.scrub(t.Error), query.ErrUnavailable)
		}
		if t.Result.Error != "" {
			continue // the transaction failed: nothing inside it moved
		}
		created := make(map[string]bool)
		if t.Result.To != nil && strings.HasPrefix(strings.ToUpper(t.Result.Type), "CREATE") {
			created[addrLower(*t.Result.To)] = true // a creating transaction
		}
		out = walkFrames(out, hash, t.Result.Calls, created)
	}
	return out, nil
}

// walkFrames appends the movements of frames and their children in call
// order, leaving out frames that failed, with everything under them.
// created holds the contracts created so far in the transaction: one of
// them that self-destructs to itself burns its balance (EIP-6780: it is
// deleted, and the ether with it); any other contract doing so keeps it
// (since Cancun), which moves nothing.
func walkFrames(out []query.InternalMove, hash string, frames []callFrame, created map[string]bool) []query.InternalMove {
	for _, f := range frames {
		if f.Error != "" {
			continue
		}
		value := "0"
		if f.Value != nil {
			value = f.Value.ToInt().String()
		}
		to := ""
		if f.To != nil {
			to = addrLower(*f.To)
		}
		from := addrLower(f.From)
		switch strings.ToUpper(f.Type) {
		case "CALL":
			if value != "0" {
				out = append(out, query.InternalMove{TxHash: hash, Kind: query.KindInternal, From: from, To: to, Amount: value})
			}
		case "CALLCODE":
			// The code runs in the caller's account: the value stays there.
			if value != "0" {
				out = append(out, query.InternalMove{TxHash: hash, Kind: query.KindInternal, From: from, To: from, Amount: value})
			}
		case "CREATE", "CREATE2":
			created[to] = true
			out = append(out, query.InternalMove{TxHash: hash, Kind: query.KindCreation, From: from, To: to, Amount: value})
		case "SELFDESTRUCT":
			switch {
			case value == "0":
			case to == from && created[from]:
				out = append(out, query.InternalMove{TxHash: hash, Kind: query.KindBurn, From: from, Amount: value})
			case to == from:
			default:
				out = append(out, query.InternalMove{TxHash: hash, Kind: query.KindSelfdestruct, From: from, To: to, Amount: value})
			}
		}
		out = walkFrames(out, hash, f.Calls, created)
	}
	return out
}

// parityTrace is an entry of trace_block.
type parityTrace struct {
	Type   string `json:"type"`
	Action struct {
		CallType      string          `json:"callType"`
		From          common.Address  `json:"from"`
		To            *common.Address `json:"to"`
		Value         *hexutil.Big    `json:"value"`
		Address       common.Address  `json:"address"`       // suicide
		RefundAddress common.Address  `json:"refundAddress"` // suicide
		Balance       *hexutil.Big    `json:"balance"`       // suicide
	} `json:"action"`
	Result *struct {
		Address *common.Address `json:"address"` // create
	} `json:"result"`
	Error           string       `json:"error"`
	TraceAddress    []int        `json:"traceAddress"`
	TransactionHash *common.Hash `json:"transactionHash"`
	BlockHash       common.Hash  `json:"blockHash"`
}

func (s *Source) parityTraces(ctx context.Context, b query.SourceBlock) ([]query.InternalMove, error) {
	var res []parityTrace
	if err := s.rpc.CallContext(ctx, &res, "trace_block", hexutil.EncodeUint64(b.Number)); err != nil {
		return nil, s.unavailable(ctx, "trace_block", err)
	}
	var (
		out     []query.InternalMove
		failed  [][]int         // trace addresses of failed frames in the current transaction
		created map[string]bool // contracts it created (see walkFrames)
		cur     string
	)
	under := func(addr []int) bool {
		for _, f := range failed {
			if len(addr) >= len(f) && slices.Equal(addr[:len(f)], f) {
				return true
			}
		}
		return false
	}
	for _, t := range res {
		if t.TransactionHash == nil {
			continue // a block or uncle reward
		}
		if hexLower(t.BlockHash) != b.Hash {
			return nil, fmt.Errorf("traces of block %d %s: traced block %s: %w", b.Number, b.Hash, hexLower(t.BlockHash), query.ErrNotFound)
		}
		hash := hexLower(*t.TransactionHash)
		if hash != cur {
			cur, failed, created = hash, nil, make(map[string]bool)
		}
		if t.Error != "" || under(t.TraceAddress) {
			failed = append(failed, t.TraceAddress)
			continue
		}
		if len(t.TraceAddress) == 0 {
			if t.Type == "create" && t.Result != nil && t.Result.Address != nil {
				created[addrLower(*t.Result.Address)] = true
			}
			continue // the transaction itself
		}
		value := "0"
		if t.Action.Value != nil {
			value = t.Action.Value.ToInt().String()
		}
		from := addrLower(t.Action.From)
		switch t.Type {
		case "call":
			to := ""
			if t.Action.To != nil {
				to = addrLower(*t.Action.To)
			}
			switch t.Action.CallType {
			case "call":
				if value != "0" {
					out = append(out, query.InternalMove{TxHash: hash, Kind: query.KindInternal, From: from, To: to, Amount: value})
				}
			case "callcode":
				if value != "0" {
					out = append(out, query.InternalMove{TxHash: hash, Kind: query.KindInternal, From: from, To: from, Amount: value})
				}
			}
		case "create":
			to := ""
			if t.Result != nil && t.Result.Address != nil {
				to = addrLower(*t.Result.Address)
			}
			created[to] = true
			out = append(out, query.InternalMove{TxHash: hash, Kind: query.KindCreation, From: from, To: to, Amount: value})
		case "suicide":
			amount := "0"
			if t.Action.Balance != nil {
				amount = t.Action.Balance.ToInt().String()
			}
			from, to := addrLower(t.Action.Address), addrLower(t.Action.RefundAddress)
			switch {
			case amount == "0":
			case to == from && created[from]:
				out = append(out, query.InternalMove{TxHash: hash, Kind: query.KindBurn, From: from, Amount: amount})
			case to == from:
			default:
				out = append(out, query.InternalMove{TxHash: hash, Kind: query.KindSelfdestruct,
					From: from, To: to, Amount: amount})
			}
		}
	}
	return out, nil
}
