package evm

// What the full-history backfill reads: account states at historical
// blocks, and Transfer logs over long ranges in spans that adapt to the
// node's or provider's limits.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/wharfhq/wharf/query"
)

var _ query.StateSource = (*Source)(nil)

// States returns the native balance of addresses at block and, with
// nonces, their nonce (eth_getBalance, eth_getTransactionCount), in one
// batch. Errors: query.ErrNoState when the node has no state for block (a
// node that is not an archive), ErrUnavailable.
func (s *Source) States(ctx context.Context, block uint64, addresses []string, nonces bool) ([]query.AccountState, error) {
	at := hexutil.EncodeUint64(block)
	per := 1
	if nonces {
		per = 2
	}
	bals := make([]hexutil.Big, len(addresses))
	ns := make([]hexutil.Uint64, len(addresses))
	batch := make([]rpc.BatchElem, 0, per*len(addresses))
	for i, a := range addresses {
		addr := common.HexToAddress(a)
		batch = append(batch, rpc.BatchElem{Method: "eth_getBalance", Args: []any{addr, at}, Result: &bals[i]})
		if nonces {
			batch = append(batch, rpc.BatchElem{Method: "eth_getTransactionCount", Args: []any{addr, at}, Result: &ns[i]})
		}
	}
	if err := s.batch(ctx, batch); err != nil {
		return nil, err
	}
	out := make([]query.AccountState, len(addresses))
	for i := range addresses {
		for _, e := range batch[per*i : per*i+per] {
			if e.Error == nil {
				continue
			}
			if noState(e.Error) {
				return nil, fmt.Errorf("%s at block %d: %w: %w", e.Method, block, query.ErrNoState, s.nodeErr(e.Error))
			}
			return nil, s.unavailable(ctx, e.Method, e.Error)
		}
		out[i] = query.AccountState{Balance: query.AmountFromBig(bals[i].ToInt()), Nonce: uint64(ns[i])}
	}
	return out, nil
}

var _ query.CodeReader = (*Source)(nil)

// HasCode reports whether each of addresses holds code at block, from one
// batch of eth_getCode.
func (s *Source) HasCode(ctx context.Context, block uint64, addresses []string) ([]bool, error) {
	at := hexutil.EncodeUint64(block)
	codes := make([]hexutil.Bytes, len(addresses))
	batch := make([]rpc.BatchElem, len(addresses))
	for i, a := range addresses {
		batch[i] = rpc.BatchElem{Method: "eth_getCode", Args: []any{common.HexToAddress(a), at}, Result: &codes[i]}
	}
	if err := s.batch(ctx, batch); err != nil {
		return nil, err
	}
	out := make([]bool, len(addresses))
	for i, e := range batch {
		if e.Error != nil {
			if noState(e.Error) {
				return nil, fmt.Errorf("eth_getCode at block %d: %w: %w", block, query.ErrNoState, s.nodeErr(e.Error))
			}
			return nil, s.unavailable(ctx, e.Method, e.Error)
		}
		out[i] = len(codes[i]) > 0
	}
	return out, nil
}

var _ query.StateBatcher = (*Source)(nil)

// StatesAt returns the states reads ask, as States, in one batch of
// eth_getBalance and eth_getTransactionCount calls for them all (sent in
// parts of BatchSize calls, a few at once). Errors as States.
func (s *Source) StatesAt(ctx context.Context, reads []query.StateRead) ([][]query.AccountState, error) {
	type slot struct {
		read, i int
		nonce   bool
	}
	var batch []rpc.BatchElem
	var slots []slot
	out := make([][]query.AccountState, len(reads))
	bals := make([][]hexutil.Big, len(reads))
	ns := make([][]hexutil.Uint64, len(reads))
	for r, rd := range reads {
		at := hexutil.EncodeUint64(rd.Block)
		out[r] = make([]query.AccountState, len(rd.Addresses))
		bals[r] = make([]hexutil.Big, len(rd.Addresses))
		ns[r] = make([]hexutil.Uint64, len(rd.Addresses))
		for i, a := range rd.Addresses {
			addr := common.HexToAddress(a)
			batch = append(batch, rpc.BatchElem{Method: "eth_getBalance", Args: []any{addr, at}, Result: &bals[r][i]})
			slots = append(slots, slot{r, i, false})
			if rd.Nonces {
				batch = append(batch, rpc.BatchElem{Method: "eth_getTransactionCount", Args: []any{addr, at}, Result: &ns[r][i]})
				slots = append(slots, slot{r, i, true})
			}
		}
	}
	// The parts go at once (a node answers a batch's calls one after
	// another), at most four.
	parts := slices.Collect(slices.Chunk(batch, s.cfg.BatchSize))
	sem := make(chan struct{}, 4)
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, part := range parts {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = s.batch(ctx, part)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for k, e := range batch {
		sl := slots[k]
		if e.Error != nil {
			if noState(e.Error) {
				return nil, fmt.Errorf("%s at block %d: %w: %w", e.Method, reads[sl.read].Block, query.ErrNoState, s.nodeErr(e.Error))
			}
			return nil, s.unavailable(ctx, e.Method, e.Error)
		}
		if sl.nonce {
			out[sl.read][sl.i].Nonce = uint64(ns[sl.read][sl.i])
		} else {
			out[sl.read][sl.i].Balance = query.AmountFromBig(bals[sl.read][sl.i].ToInt())
		}
	}
	return out, nil
}

// noState reports whether a node refused a call for lack of the state of
// its block: geth's hash scheme says "missing trie node", its path scheme
// "historical state ... is not available", others "state ... pruned".
func noState(err error) bool {
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"missing trie node", "historical state", "state not available", "state is not available",
		"state unavailable", "pruned", "required historical state"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// logLimit tells whether a node or provider refused an eth_getLogs for
// its size, and whether for its block range (rangeLimit) rather than the
// number of results. Providers word it many ways: "query returned more
// than 10000 results", "block range too large", "exceed maximum block
// range: 2000", "Log response size exceeded", code -32005.
func logLimit(err error) (limited, rangeLimit bool) {
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"more than", "results", "response size", "too many logs"} {
		if strings.Contains(msg, s) {
			return true, false
		}
	}
	for _, s := range []string{"range", "too large", "too big", "too wide", "exceed", "limit", "too many blocks"} {
		if strings.Contains(msg, s) {
			return true, true
		}
	}
	var re rpc.Error
	if errors.As(err, &re) && re.ErrorCode() == -32005 {
		return true, false
	}
	return false, false
}

// logSpan is the adaptive width of eth_getLogs ranges: halved when the
// node refuses a range as too large or too full, doubled back after a
// range it answered, never again to a width it refused for its range.
type logSpan struct {
	width, ceiling uint64 // ceiling 0: none learnt
	max            uint64
}

func (l *logSpan) get() uint64 {
	l.width = max(1, min(l.width, l.max))
	return l.width
}

func (l *logSpan) refused(width uint64, rangeLimit bool) {
	if rangeLimit && (l.ceiling == 0 || width < l.ceiling) {
		l.ceiling = width
	}
	l.width = max(1, width/2)
}

func (l *logSpan) answered(width uint64) {
	if width < l.width {
		return // a short last range says nothing
	}
	next := 2 * l.width
	if l.ceiling != 0 && next >= l.ceiling {
		next = max(l.width, l.ceiling-1)
	}
	l.width = min(next, l.max)
}

// walkLogs reads the Transfer logs with topics over from to to in spans
// of l's width, adapting it, and hands each answer to f.
func (s *Source) walkLogs(ctx context.Context, l *logSpan, from, to uint64, topics [][]common.Hash, f func([]query.TokenTransfer)) error {
	return walkSpans(ctx, l, from, to, func(lo, hi uint64) error {
		got, err := s.filterTransfers(ctx, ethereum.FilterQuery{
			FromBlock: new(big.Int).SetUint64(lo),
			ToBlock:   new(big.Int).SetUint64(hi),
			Topics:    topics,
		})
		if err == nil {
			f(got)
		}
		return err
	})
}

// walkSpans calls read over from to to in spans of l's width: a span the
// node refuses for its size (logLimit) is halved and read again, and the
// width adapts to the answers.
func walkSpans(ctx context.Context, l *logSpan, from, to uint64, read func(lo, hi uint64) error) error {
	for lo := from; lo <= to; {
		w := l.get()
		hi := to
		if to-lo >= w {
			hi = lo + w - 1
		}
		if err := read(lo, hi); err != nil {
			if limited, byRange := logLimit(err); limited && hi > lo && ctx.Err() == nil {
				l.refused(hi-lo+1, byRange)
				continue
			}
			return err
		}
		l.answered(hi - lo + 1)
		if hi == to {
			break
		}
		lo = hi + 1
	}
	return nil
}

// emittedBlocks returns the blocks from to to with a log emitted by one
// of addresses: eth_getLogs by address, in spans that adapt as
// Transfers' do.
func (s *Source) emittedBlocks(ctx context.Context, from, to uint64, addresses []string) ([]uint64, error) {
	addrs := make([]common.Address, len(addresses))
	for i, a := range addresses {
		addrs[i] = common.HexToAddress(a)
	}
	s.spanMu.Lock()
	span := s.span
	s.spanMu.Unlock()
	found := make(map[uint64]bool)
	err := walkSpans(ctx, &span, from, to, func(lo, hi uint64) error {
		logs, err := s.eth.FilterLogs(ctx, ethereum.FilterQuery{
			FromBlock: new(big.Int).SetUint64(lo),
			ToBlock:   new(big.Int).SetUint64(hi),
			Addresses: addrs,
		})
		if err != nil {
			return s.unavailable(ctx, "eth_getLogs", err)
		}
		for _, l := range logs {
			found[l.BlockNumber] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(found)), nil
}

// filteredTrace is what tracedBlocks reads of a trace of trace_filter
// (the Parity format): its block and its parties.
type filteredTrace struct {
	BlockNumber uint64 `json:"blockNumber"`
	Action      struct {
		From          *common.Address `json:"from"`
		To            *common.Address `json:"to"`
		Address       *common.Address `json:"address"`       // a self-destruct's contract
		RefundAddress *common.Address `json:"refundAddress"` // and its beneficiary
		Author        *common.Address `json:"author"`        // a reward's
	} `json:"action"`
	Result *struct {
		Address *common.Address `json:"address"` // a creation's contract
	} `json:"result"`
}

// parties are the addresses t names.
func (t filteredTrace) parties() []common.Address {
	var out []common.Address
	for _, a := range []*common.Address{t.Action.From, t.Action.To, t.Action.Address, t.Action.RefundAddress, t.Action.Author} {
		if a != nil {
			out = append(out, *a)
		}
	}
	if t.Result != nil && t.Result.Address != nil {
		out = append(out, *t.Result.Address)
	}
	return out
}

// tracedBlocks returns the blocks from to to with a trace from or to one
// of addresses (a call with or without value, a creation, a
// self-destruct, failed ones too): trace_filter with fromAddress, then
// with toAddress (nodes combine the two differently), over the whole
// range, halved where the node refuses it as too large. Errors:
// errNoTraceFilter when the node serves no trace_filter.
func (s *Source) tracedBlocks(ctx context.Context, from, to uint64, addresses []string) ([]uint64, error) {
	set := make(map[common.Address]bool, len(addresses))
	addrs := make([]common.Address, len(addresses))
	for i, a := range addresses {
		addrs[i] = common.HexToAddress(a)
		set[addrs[i]] = true
	}
	found := make(map[uint64]bool)
	span := logSpan{width: to - from + 1, max: to - from + 1}
	for _, side := range []string{"fromAddress", "toAddress"} {
		err := walkSpans(ctx, &span, from, to, func(lo, hi uint64) error {
			var traces []filteredTrace
			err := s.rpc.CallContext(ctx, &traces, "trace_filter", map[string]any{
				"fromBlock": hexutil.EncodeUint64(lo), "toBlock": hexutil.EncodeUint64(hi), side: addrs})
			switch {
			case err != nil && noMethod(err):
				return errNoTraceFilter
			case err != nil:
				return s.unavailable(ctx, "trace_filter", err)
			}
			for _, t := range traces {
				if slices.ContainsFunc(t.parties(), func(a common.Address) bool { return set[a] }) {
					found[t.BlockNumber] = true
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return slices.Sorted(maps.Keys(found)), nil
}
