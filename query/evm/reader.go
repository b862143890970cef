package evm

import (
	"context"
	"fmt"
	"sync"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// Reader is chain.Reader on a query.Source (a Source on a node, or a
// test's wrapper of one): the EVM family's side of the seam. It is also
// a chain.BalanceReader, chain.TokenReader and query.Finalizer, and
// chain.Internals when the Source can trace. It is safe for concurrent
// use.
type Reader struct {
	src query.Source

	mu       sync.Mutex
	dense    map[string]bool // per pass: most blocks it scanned matched
	internal string          // the trace API Activity reads, "" none
	tracer   query.Tracer
	// History's search for pass-through movements: every block when
	// exhaustive (without trace_filter); traceFilter is -1 once the node
	// was found without trace_filter.
	exhaustive  bool
	traceFilter int
}

var (
	_ chain.Reader         = (*Reader)(nil)
	_ chain.BalanceReader  = (*Reader)(nil)
	_ chain.TokenReader    = (*Reader)(nil)
	_ chain.Internals      = (*Reader)(nil)
	_ chain.HistorySource  = (*Reader)(nil)
	_ chain.HistoryBatcher = (*Reader)(nil)
	_ query.Finalizer      = (*Reader)(nil)
)

// NewReader returns the Reader of src.
func NewReader(src query.Source) *Reader {
	r := &Reader{src: src, dense: make(map[string]bool)}
	r.tracer, _ = src.(query.Tracer)
	return r
}

// Source is the Source the Reader reads.
func (r *Reader) Source() query.Source { return r.src }

// ChainID returns "eip155:" and the node's chain ID.
func (r *Reader) ChainID(ctx context.Context) (string, error) {
	id, err := r.src.ChainID(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s:%d", Namespace, id), nil
}

// Head returns the number of the node's latest block.
func (r *Reader) Head(ctx context.Context) (uint64, error) { return r.src.Head(ctx) }

// Headers returns the blocks from to to, cut before the first that is
// not the child of the one before it (a reorg while reading).
func (r *Reader) Headers(ctx context.Context, from, to uint64) ([]query.Block, error) {
	if to < from {
		return nil, nil
	}
	blocks, err := r.src.Blocks(ctx, from, to)
	if err != nil {
		return nil, err
	}
	blocks = linked(blocks)
	out := make([]query.Block, len(blocks))
	for i, b := range blocks {
		out[i] = b.Block
	}
	return out, nil
}

// linked cuts blocks before the first that is not the child of the one
// before it.
func linked(blocks []query.SourceBlock) []query.SourceBlock {
	for i := 1; i < len(blocks); i++ {
		if blocks[i].ParentHash != blocks[i-1].Hash {
			return blocks[:i]
		}
	}
	return blocks
}

// Balances reads balances at block (Source.Balances).
func (r *Reader) Balances(ctx context.Context, block uint64, queries []query.BalanceQuery) ([]query.Balance, error) {
	return r.src.Balances(ctx, block, queries)
}

// Token returns what the token contract of holding says of itself; for
// an ERC-1155 holding key, its contract's. Without a query.TokenInfo
// Source: ErrNotImplemented.
func (r *Reader) Token(ctx context.Context, holding string) (query.TokenMeta, error) {
	ti, ok := r.src.(query.TokenInfo)
	if !ok {
		return query.TokenMeta{}, fmt.Errorf("token %s: %w", holding, chain.ErrNotImplemented)
	}
	contract, _ := query.SplitHoldingKey(holding)
	return ti.Token(ctx, contract)
}

// Finalized returns the node's finalized block; ErrNotImplemented when
// the Source cannot say.
func (r *Reader) Finalized(ctx context.Context) (uint64, error) {
	fz, ok := r.src.(query.Finalizer)
	if !ok {
		return 0, fmt.Errorf("finalized block: %w", chain.ErrNotImplemented)
	}
	return fz.Finalized(ctx)
}

// Safe returns the node's safe block; ErrNotImplemented when the Source
// cannot say.
func (r *Reader) Safe(ctx context.Context) (uint64, error) {
	fz, ok := r.src.(query.Finalizer)
	if !ok {
		return 0, fmt.Errorf("safe block: %w", chain.ErrNotImplemented)
	}
	return fz.Safe(ctx)
}

// ProbeInternals returns the node's trace API (ProbeTraces). Errors: one
// wrapping chain.ErrNotImplemented when the node has none or the Source
// cannot trace.
func (r *Reader) ProbeInternals(ctx context.Context) (string, error) {
	api := ""
	if r.tracer != nil {
		var err error
		if api, err = r.tracer.ProbeTraces(ctx); err != nil {
			return "", err
		}
	}
	if api == "" {
		return "", errNoTraceAPI
	}
	return api, nil
}

// errNoTraceAPI is ProbeInternals' error on a node without a trace API.
var errNoTraceAPI = fmt.Errorf("the node serves no trace API (debug_traceBlockByNumber with callTracer, or trace_block): %w", chain.ErrNotImplemented)

// UseInternals makes Activity read the traces of every block from api
// (TraceCallTracer or TraceParity), or none with "".
func (r *Reader) UseInternals(api string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.internal = api
}

func (r *Reader) traceAPI() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tracer == nil {
		return ""
	}
	return r.internal
}
