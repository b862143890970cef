package evm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
	Type   string          `json:"type"`
	From   common.Address  `json:"from"`
	To     *common.Address `json:"to"`
	Value  *hexutil.Big    `json:"value"`
	Error  string          `json:"error"`
	Output rawOutput       `json:"output"`
	Calls  []callFrame     `json:"calls"`
}

// rawOutput is a frame's output as the node wrote it (a JSON string of
// hex), decoded only when the frame failed: every frame has one, and few
// are needed.
type rawOutput []byte

// UnmarshalJSON keeps a copy of the JSON string.
func (o *rawOutput) UnmarshalJSON(b []byte) error {
	*o = append((*o)[:0], b...)
	return nil
}

// bytes decodes the output; nil when it is not hex.
func (o rawOutput) bytes() []byte {
	var out hexutil.Bytes
	if len(o) == 0 || out.UnmarshalJSON(o) != nil {
		return nil
	}
	return out
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
			return nil, fmt.Errorf("trace of %s in block %d: %s: %w", hash, b.Number, query.ChainText(s.secrets.scrub(t.Error), query.MaxReason), query.ErrUnavailable)
		}
		failed := ""
		if t.Result.Error != "" {
			// The transaction failed: nothing inside it moved. Its
			// top-level call carries the reason.
			failed = RevertReason(t.Result.Error, t.Result.Output.bytes())
			top := query.InternalMove{TxHash: hash, Kind: query.KindTransaction, From: addrLower(t.Result.From),
				CallType: callType(t.Result.Type), Error: failed}
			if t.Result.To != nil {
				top.To = addrLower(*t.Result.To)
			}
			if t.Result.Value != nil {
				top.Amount = query.AmountFromBig(t.Result.Value.ToInt())
			}
			out = append(out, top)
		}
		created := make(map[string]bool)
		if t.Result.To != nil && strings.HasPrefix(strings.ToUpper(t.Result.Type), "CREATE") {
			created[addrLower(*t.Result.To)] = true // a creating transaction
		}
		out = walkFrames(out, hash, nil, failed, t.Result.Calls, created)
	}
	return out, nil
}

// walkFrames appends the movements of frames and their children in call
// order, with their type and path in the call tree (under the frame
// whose trace address is parent: a stack the calls share, written as a
// string only for the frames listed). A frame that failed, and every frame under it, is listed with
// the error (failed, the error above it, when it has none of its own):
// it moved nothing. created holds the contracts created so far in the
// transaction: one of them that self-destructs to itself burns its
// balance (EIP-6780: it is deleted, and the ether with it); any other
// contract doing so keeps it (since Cancun), which moves nothing.
func walkFrames(out []query.InternalMove, hash string, parent []int, failed string, frames []callFrame, created map[string]bool) []query.InternalMove {
	for i, f := range frames {
		path := append(parent, i) // siblings overwrite the same slot: only its string is kept
		errText := failed
		if errText == "" && f.Error != "" {
			errText = RevertReason(f.Error, f.Output.bytes())
		}
		var value query.Amount
		if f.Value != nil {
			value = query.AmountFromBig(f.Value.ToInt())
		}
		to := ""
		if f.To != nil {
			to = addrLower(*f.To)
		}
		from := addrLower(f.From)
		typ := callType(f.Type)
		mv := query.InternalMove{TxHash: hash, From: from, To: to, Amount: value, CallType: typ, Error: errText}
		switch typ {
		case "CALL":
			if !value.IsZero() {
				mv.Kind = query.KindInternal
			}
		case "CALLCODE":
			// The code runs in the caller's account: the value stays there.
			if !value.IsZero() {
				mv.Kind, mv.To = query.KindInternal, from
			}
		case "CREATE", "CREATE2":
			if errText == "" {
				created[to] = true
			}
			mv.Kind = query.KindCreation
		case "SELFDESTRUCT":
			switch {
			case value.IsZero():
			case to == from && created[from]:
				mv.Kind, mv.To = query.KindBurn, ""
			case to == from:
			default:
				mv.Kind = query.KindSelfdestruct
			}
		}
		if mv.Kind != "" {
			mv.CallPath = tracePath(path)
			out = append(out, mv)
		}
		out = walkFrames(out, hash, path, errText, f.Calls, created)
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
		Output  rawOutput       `json:"output"`  // call
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
	type failure struct {
		addr []int
		err  string
	}
	var (
		out     []query.InternalMove
		failed  []failure       // failed frames in the current transaction
		created map[string]bool // contracts it created (see walkFrames)
		cur     string
	)
	// under returns the error of the outermost failed frame above addr
	// (or at it), "" when none.
	under := func(addr []int) string {
		for _, f := range failed {
			if len(addr) >= len(f.addr) && slices.Equal(addr[:len(f.addr)], f.addr) {
				return f.err
			}
		}
		return ""
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
		errText := under(t.TraceAddress)
		if errText == "" && t.Error != "" {
			var output []byte
			if t.Result != nil {
				output = t.Result.Output.bytes()
			}
			errText = RevertReason(t.Error, output)
			failed = append(failed, failure{t.TraceAddress, errText})
		}
		var value query.Amount
		if t.Action.Value != nil {
			value = query.AmountFromBig(t.Action.Value.ToInt())
		}
		from := addrLower(t.Action.From)
		to := ""
		if t.Action.To != nil {
			to = addrLower(*t.Action.To)
		}
		if len(t.TraceAddress) == 0 {
			switch {
			case errText != "":
				// A failed transaction: its top-level call carries the reason.
				out = append(out, query.InternalMove{TxHash: hash, Kind: query.KindTransaction, From: from, To: to,
					Amount: value, CallType: parityCallType(t.Type, t.Action.CallType), Error: errText})
			case t.Type == "create" && t.Result != nil && t.Result.Address != nil:
				created[addrLower(*t.Result.Address)] = true
			}
			continue // the transaction itself
		}
		mv := query.InternalMove{TxHash: hash, From: from, To: to, Amount: value,
			CallType: parityCallType(t.Type, t.Action.CallType), CallPath: tracePath(t.TraceAddress), Error: errText}
		switch t.Type {
		case "call":
			switch t.Action.CallType {
			case "call":
				if !value.IsZero() {
					mv.Kind = query.KindInternal
				}
			case "callcode":
				if !value.IsZero() {
					mv.Kind, mv.To = query.KindInternal, from
				}
			}
		case "create":
			mv.To = ""
			if t.Result != nil && t.Result.Address != nil {
				mv.To = addrLower(*t.Result.Address)
			}
			if errText == "" {
				created[mv.To] = true
			}
			mv.Kind = query.KindCreation
		case "suicide":
			var amount query.Amount
			if t.Action.Balance != nil {
				amount = query.AmountFromBig(t.Action.Balance.ToInt())
			}
			from, to := addrLower(t.Action.Address), addrLower(t.Action.RefundAddress)
			mv.From, mv.To, mv.Amount = from, to, amount
			switch {
			case amount.IsZero():
			case to == from && created[from]:
				mv.Kind, mv.To = query.KindBurn, ""
			case to == from:
			default:
				mv.Kind = query.KindSelfdestruct
			}
		}
		if mv.Kind != "" {
			out = append(out, mv)
		}
	}
	return out, nil
}

// parityCallType is the call type of a trace_block entry, spelled as
// geth's callTracer spells it (CALL, DELEGATECALL, CREATE, SELFDESTRUCT...).
func parityCallType(typ, ct string) string {
	switch typ {
	case "call":
		return callType(ct)
	case "suicide":
		return "SELFDESTRUCT"
	}
	return callType(typ) // create (trace_block does not tell CREATE2), reward
}

// callType is a trace frame's type as the node spells it, in capitals:
// the node's string, made query.ChainText.
func callType(typ string) string {
	return query.ChainText(strings.ToUpper(typ), query.MaxCallType)
}

// tracePath writes a trace address as a call path: "0.2.1".
func tracePath(addr []int) string {
	b := make([]byte, 0, 2*len(addr))
	for i, n := range addr {
		if i > 0 {
			b = append(b, '.')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return string(b)
}
