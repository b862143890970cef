package evm

// History: the blocks in which addresses may have moved, found without
// reading every block: Transfer logs by address, the node's trace_filter
// where it has one, the bisection of their balances and nonces
// (bisect.go), and on a node without trace_filter, for the addresses
// whose movements no state shows (pass-through movements of contracts,
// and of addresses that may have been a contract created and destroyed
// in one transaction), the logs the addresses emitted, or every block
// when asked for (ExhaustHistory).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/wharfhq/wharf/internal/parallel"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// ExhaustHistory makes History read every block of its range (and trace
// each one with transactions, where Activity reads traces) for the
// addresses that may have moved without any state showing it, on a node
// without trace_filter: as many calls as a scan of the range, for a
// guarantee that only a contract created and destroyed within one
// transaction, or a payment passing through a contract, needs.
func (r *Reader) ExhaustHistory(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exhaustive = on
}

// Histories returns the blocks from to to in which one of addresses may
// have moved, ascending: those with a Transfer log naming one of them
// (eth_getLogs by topic), those where the native balance or the nonce of
// one changed (a bisection over the node's archive state), and those
// where one took part in a call that no state may show. Where the node
// answers trace_filter (Erigon, Nethermind, Reth, anvil), that is every
// call from or to them (whose blocks also cut the bisection short); on a
// node without it, for an address that holds code at to, or has neither
// code nor a nonce there (it may have been a contract created and
// destroyed in one transaction, EIP-6780), every block's transactions
// and traces when ExhaustHistory is on, else the logs it emitted.
// Errors: chain.ErrNotImplemented (with query.ErrNoState) when the node
// keeps no state for the range (not an archive node).
func (r *Reader) Histories(ctx context.Context, addresses []string, from, to uint64) ([]uint64, error) {
	if to < from || len(addresses) == 0 {
		return nil, nil
	}
	ss, ok := r.src.(query.StateSource)
	if !ok {
		return nil, fmt.Errorf("history %d-%d: the node reads no state at a block: %w", from, to, chain.ErrNotImplemented)
	}
	found, err := r.history(ctx, ss, addresses, from, to)
	if errors.Is(err, query.ErrNoState) {
		return nil, fmt.Errorf("history %d-%d: %w: %w", from, to, chain.ErrNotImplemented, err)
	}
	if err != nil {
		return nil, fmt.Errorf("history %d-%d: %w", from, to, err)
	}
	return found, nil
}

// History returns the blocks from to to in which address may have moved,
// as Histories does for several.
func (r *Reader) History(ctx context.Context, address string, from, to uint64) ([]uint64, error) {
	return r.Histories(ctx, []string{address}, from, to)
}

func (r *Reader) history(ctx context.Context, ss query.StateSource, addresses []string, from, to uint64) ([]uint64, error) {
	logs, err := r.src.Transfers(ctx, from, to, addresses)
	if err != nil {
		return nil, err
	}
	// Where the node answers trace_filter, the calls from and to the
	// addresses, of every kind: what no state shows, and the blocks of
	// most native movements, which cut the bisection short.
	hs, _ := r.src.(historySource)
	var traced []uint64
	filtered := false
	if hs != nil && r.traceFiltered() {
		traced, err = hs.tracedBlocks(ctx, from, to, addresses)
		switch {
		case errors.Is(err, errNoTraceFilter):
			r.mu.Lock()
			r.traceFilter = -1
			r.mu.Unlock()
		case err != nil:
			return nil, err
		default:
			filtered = true
		}
	}
	c := newStateCache(ss)
	changed, err := c.changedBlocks(ctx, from, to, addresses, traced)
	if err != nil {
		return nil, err
	}
	for _, l := range logs {
		changed[l.BlockNumber] = true
	}
	for _, b := range traced {
		changed[b] = true
	}
	if !filtered {
		if err := r.passThrough(ctx, c, hs, from, to, addresses, changed); err != nil {
			return nil, err
		}
	}
	return slices.Sorted(maps.Keys(changed)), nil
}

// traceFiltered reports whether History asks the node's trace_filter:
// unless it was found without one.
func (r *Reader) traceFiltered() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.traceFilter >= 0
}

// passThrough adds to changed the blocks from to to holding what the
// state search cannot see for addresses, for the addresses that could
// have had it (code, and nonces at to, the latter read by the search):
//
//   - a contract (code at to) can be called without a movement of value,
//     a log naming it or a nonce of its own (a token's own transfer, a
//     rebase, a payment that passes through);
//   - an address with neither code nor a nonce at to (creatable: it may
//     be a counterfactual contract, or an address that never sent) may
//     have been created and destroyed within one transaction, its value
//     burnt or passed on: it holds no code, nonce or balance of it at
//     any block's end. An address with a nonce and no code sent a
//     transaction: it is not a contract, so nothing created it (a
//     creation needs a nonce of 0 and no code, and only the creating
//     transaction can destroy it).
//
// On a node without trace_filter (which history asks first, for every
// address), with ExhaustHistory it reads every block of the
// range (256 a call, transactions only), and traces the blocks with
// transactions for the creatable addresses where Activity traces; else
// it reads the logs they emitted (eth_getLogs by address), which a call
// that moves nothing leaves as a rule.
func (r *Reader) passThrough(ctx context.Context, c *stateCache, hs historySource, from, to uint64, addresses []string, changed map[uint64]bool) error {
	cr, ok := c.ss.(query.CodeReader)
	if !ok {
		return nil
	}
	code, err := cr.HasCode(ctx, to, addresses)
	if err != nil {
		return err
	}
	contracts, creatable := make(map[string]bool), make(map[string]bool)
	for i, a := range addresses {
		switch {
		case code[i]:
			contracts[a] = true
		case c.get(to, a).Nonce == 0:
			creatable[a] = true
		}
	}
	if len(contracts) == 0 && len(creatable) == 0 {
		return nil
	}
	either := slices.Sorted(maps.Keys(contracts))
	either = append(either, slices.Sorted(maps.Keys(creatable))...)
	r.mu.Lock()
	exhaustive := r.exhaustive
	r.mu.Unlock()
	if exhaustive {
		return r.exhaust(ctx, from, to, contracts, creatable, changed)
	}
	if hs == nil {
		return nil
	}
	blocks, err := hs.emittedBlocks(ctx, from, to, either)
	if err != nil {
		return err
	}
	for _, b := range blocks {
		changed[b] = true
	}
	return nil
}

// exhaust adds to changed the blocks from to to with a transaction from,
// to or creating one of contracts or creatable, and where Activity reads
// traces, those whose internal movements touch one of creatable (a
// CREATE2 by a factory, a self-destruct). Withdrawals and fee income to
// them count too.
func (r *Reader) exhaust(ctx context.Context, from, to uint64, contracts, creatable map[string]bool, changed map[uint64]bool) error {
	either := func(a string) bool { return contracts[a] || creatable[a] }
	isCreatable := func(a string) bool { return creatable[a] }
	api := r.traceAPI()
	trace := len(creatable) > 0 && api != ""
	for lo := from; lo <= to; lo += 256 {
		hi := min(to, lo+255)
		blocks, err := r.src.Blocks(ctx, lo, hi)
		if err != nil {
			return err
		}
		var traced []query.SourceBlock // creatable addresses' blocks to trace
		for _, b := range blocks {
			switch {
			case len(matchBlock(b, nil, nil, either).touched) > 0:
				changed[b.Number] = true
			case trace && len(b.Txs) > 0 && !changed[b.Number]:
				traced = append(traced, b)
			}
		}
		hit := make([]bool, len(traced))
		err = parallel.Do(ctx, len(traced), 4, func(ctx context.Context, i int) error {
			moves, err := r.tracer.Traces(ctx, traced[i], api)
			if err != nil {
				return fmt.Errorf("traces of block %d: %w", traced[i].Number, err)
			}
			hit[i] = len(matchBlock(traced[i], nil, moves, isCreatable).touched) > 0
			return nil
		})
		if err != nil {
			return err
		}
		for i, b := range traced {
			if hit[i] {
				changed[b.Number] = true
			}
		}
		if uint64(len(blocks)) < hi-lo+1 {
			return fmt.Errorf("blocks %d-%d: the node has %d of them: %w", lo, hi, len(blocks), query.ErrUnavailable)
		}
	}
	return nil
}

// historySource is a Source that can tell the blocks in which addresses
// took part in a call (trace_filter) or emitted a log.
type historySource interface {
	// tracedBlocks returns the blocks from to to with a trace from or to
	// one of addresses (a call, a creation, a self-destruct). Errors:
	// errNoTraceFilter when the node serves no trace_filter.
	tracedBlocks(ctx context.Context, from, to uint64, addresses []string) ([]uint64, error)
	// emittedBlocks returns the blocks from to to with a log emitted by
	// one of addresses.
	emittedBlocks(ctx context.Context, from, to uint64, addresses []string) ([]uint64, error)
}

var _ historySource = (*Source)(nil)

// errNoTraceFilter: the node serves no trace_filter.
var errNoTraceFilter = errors.New("the node serves no trace_filter")
