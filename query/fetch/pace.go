package fetch

// Pacing the check of the statements on a Reader whose balances cost a
// scan (chain.CostlyBalances): the head follower checks at most once a
// RefreshInterval, and then every address touched since the last check.

import (
	"slices"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// checkPace is the head follower's record of its paced checks; the zero
// value has none due (the first check runs at once).
type checkPace struct {
	// next is when the next check is due.
	next time.Time
	// pending are the addresses touched since the last check, which the
	// next one reads.
	pending map[string]bool
}

// costlyBalances reports whether the chain's balances cost a scan of the
// node's state to read, so that their check is paced.
func (c *core) costlyBalances() bool {
	cb, ok := c.cfg.Reader.(chain.CostlyBalances)
	return ok && cb.BalancesCostly()
}

// checkFor returns the addresses whose balances a chunk that touched
// those of touched reads at its last block, last, to check its
// statements: all of them on a Reader whose balances are cheap to read.
// On a costly one, once RefreshInterval has passed since the last check,
// every address touched since then that set still tracks; before, or
// while the chunk is too far behind the head for balances to be read at
// last (readBalances would read them at the head, checking nothing),
// none: the chunk's rows are not checked, and touched waits for the next
// check.
func (f *follower) checkFor(touched map[string]bool, set map[string]bool, last uint64) []string {
	if !f.costlyBalances() {
		return sortedKeys(touched)
	}
	if f.pace.pending == nil {
		f.pace.pending = make(map[string]bool)
	}
	for a := range touched {
		f.pace.pending[a] = true
	}
	if f.cfg.Clock.Now().Before(f.pace.next) || f.target > last+stateWindow {
		return nil
	}
	var out []string
	for _, a := range sortedKeys(f.pace.pending) {
		if set[a] {
			out = append(out, a)
		}
	}
	return out
}

// checkDone records that a chunk whose last block is last read bals
// for the addresses checkFor returned: on a costly Reader, once they
// were read at last, the next check is due a RefreshInterval later and
// the addresses wait no more. A check the node did not answer there
// (balances at a block not its tip) leaves them waiting for the next
// chunk's.
func (f *follower) checkDone(addrs []string, bals []query.Balance, last uint64) {
	if len(addrs) == 0 || !f.costlyBalances() || !slices.ContainsFunc(bals, func(b query.Balance) bool { return b.Block == last }) {
		return
	}
	f.pace.next = f.cfg.Clock.Now().Add(f.cfg.RefreshInterval)
	clear(f.pace.pending)
}

// told returns, for a chunk whose last block is last and whose check was
// paced away on a costly Reader (bals holds no reading at last), the
// native balances of the addresses it touched as their statements tell
// them after it: stored as the addresses' balances, never compared with
// anything, so that a balance follows its statement between checks.
func (f *follower) told(touched map[string]bool, bals []query.Balance, last query.Block) []query.Balance {
	if len(touched) == 0 || !f.costlyBalances() || slices.ContainsFunc(bals, func(b query.Balance) bool { return b.Block == last.Number }) {
		return nil
	}
	now := f.cfg.Clock.Now()
	var out []query.Balance
	for _, a := range sortedKeys(touched) {
		h := f.heads[query.Holding{Address: a}]
		if h == nil || h.block > last.Number {
			continue
		}
		out = append(out, query.Balance{Chain: f.cfg.Chain, Address: a, Asset: query.AssetNative, Symbol: f.facts.native.Symbol,
			Decimals: f.facts.native.Decimals, Amount: h.balance, Block: last.Number, Updated: now})
	}
	return out
}
