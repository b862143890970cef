package fetch

// Health: the outcome of the last step, the node's head, the trace API in
// use, and the lag check. The head follower writes it; Health, InternalsSource,
// the lease's renewal and the refresher read it from their goroutines.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wharfhq/wharf/query"
)

// health is what the head follower records for the other goroutines to
// read; mu guards every field.
type health struct {
	mu           sync.Mutex
	lastOK       time.Time
	lastErr      error
	failingSince time.Time
	caughtUp     bool
	// stepStart is when the running step of the head follower started
	// (zero between steps); advanced when it last advanced: a step ended
	// well, or stored blocks.
	stepStart       time.Time
	advanced        time.Time
	newest          time.Time // time of the newest stored block
	head            uint64    // the node's head at the last step
	probed          bool      // the node was asked for its trace API
	internalsSource string    // the trace API in use, "" for none
	// covered says the statements cover every movement: with
	// internalsSource, or on a family without internal movements.
	covered bool
	// syncWait says why new subscriptions wait, SYNCING, since
	// syncWaitSince; "" when they do not.
	syncWait      string
	syncWaitSince time.Time
	// leaseErr is why this replica could not last ask for the lease
	// (nil once it could, whether it got it or not).
	leaseErr error
}

// nodeErr counts an error of the node.
func (c *core) nodeErr(err error) error {
	if err != nil && !errors.Is(err, context.Canceled) {
		c.metrics.nodeErrors.Inc()
	}
	return err
}

// record keeps the outcome of a step for Health and the metrics.
func (c *core) record(err error) {
	now := c.cfg.Clock.Now()
	h := c.health
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stepStart = time.Time{}
	if err == nil {
		changed := h.lastErr != nil
		h.lastOK, h.advanced, h.lastErr, h.failingSince = now, now, nil, time.Time{}
		c.metrics.lastSuccess.Set(float64(now.UnixNano()) / 1e9)
		if changed {
			c.wakeRenew()
		}
		return
	}
	c.metrics.errors.Inc()
	if h.lastErr == nil {
		h.failingSince = now
		defer c.wakeRenew()
	}
	h.lastErr = err
}

// stepStarted records that a step of the head follower starts.
func (c *core) stepStarted() {
	c.health.mu.Lock()
	defer c.health.mu.Unlock()
	c.health.stepStart = c.cfg.Clock.Now()
}

// wakeRenew tells the lease's renewal that there is news to report.
func (c *core) wakeRenew() {
	select {
	case c.headRead <- struct{}{}:
	default:
	}
}

// report is what the lease's renewal tells every replica: the node's
// head, how long ago the head follower advanced, and what fails.
func (c *core) report() query.LeaderReport {
	problem := ""
	if err := c.problem(); err != nil {
		problem = err.Error()
	}
	c.health.mu.Lock()
	defer c.health.mu.Unlock()
	r := query.LeaderReport{Head: c.health.head, Progress: -1, Problem: problem}
	if !c.health.advanced.IsZero() {
		r.Progress = max(0, c.cfg.Clock.Now().Sub(c.health.advanced))
	}
	return r
}

// clearHealth forgets the outcome of the steps, as when this replica
// stops leading.
func (c *core) clearHealth() {
	h := c.health
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastErr, h.failingSince, h.caughtUp = nil, time.Time{}, false
	h.stepStart, h.advanced = time.Time{}, time.Time{}
	// The head this replica last read is not the node's head when it
	// leads again: the next leadership records the head it reads.
	h.head = 0
}

// setSyncWait records why new subscriptions cannot sync yet ("" when
// they can), keeping the time it was first said.
func (c *core) setSyncWait(reason string) {
	h := c.health
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case reason == "":
		h.syncWait, h.syncWaitSince = "", time.Time{}
	case h.syncWait == "":
		h.syncWait, h.syncWaitSince = reason, c.cfg.Clock.Now()
	default:
		h.syncWait = reason
	}
}

func (c *core) setCaughtUp(caughtUp bool, newest query.Block) {
	h := c.health
	h.mu.Lock()
	defer h.mu.Unlock()
	h.caughtUp = caughtUp
	if !newest.Time.IsZero() {
		h.newest = newest.Time
		h.advanced = c.cfg.Clock.Now()
	}
}

// setNodeHead records the node's head and wakes the lease's renewal,
// which records it in the lease as soon as this leadership has read one.
func (c *core) setNodeHead(head uint64) {
	c.health.mu.Lock()
	changed := c.health.head != head
	c.health.head = head
	c.health.mu.Unlock()
	if changed {
		c.wakeRenew()
	}
}

// nodeHead is the node's head as of the head follower's last step.
func (c *core) nodeHead() uint64 {
	c.health.mu.Lock()
	defer c.health.mu.Unlock()
	return c.health.head
}

func (c *core) setInternals(api string, covered bool) {
	c.health.mu.Lock()
	defer c.health.mu.Unlock()
	c.health.internalsSource, c.health.covered, c.health.probed = api, covered, true
}

// Health reports whether fetching works: an error when the last step
// failed (the node or the database is unreachable, the chain is
// stopped), when the running step has not advanced for StallAfter (a
// node or a database that hangs), or when the fetcher is caught up with
// a node whose newest block is older than LagAfter.
func (f *Fetcher) Health() error { return f.core.problem() }

// problem is Health.
func (c *core) problem() error {
	h := c.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lastErr != nil {
		return fmt.Errorf("fetching %s: failing since %s: %w", c.cfg.Chain, h.failingSince.UTC().Format(time.RFC3339), h.lastErr)
	}
	if !h.stepStart.IsZero() {
		since := h.stepStart
		if h.advanced.After(since) {
			since = h.advanced
		}
		if d := c.cfg.Clock.Now().Sub(since); d > c.cfg.StallAfter {
			return fmt.Errorf("fetching %s: stalled: the running step has not advanced for %s (the node or the database does not answer)", c.cfg.Chain, d.Round(time.Second))
		}
	}
	if c.cfg.LagAfter > 0 && h.caughtUp && !h.newest.IsZero() {
		if age := c.cfg.Clock.Now().Sub(h.newest); age > c.cfg.LagAfter {
			return fmt.Errorf("fetching %s: the node lags: its newest block is %s old", c.cfg.Chain, age.Round(time.Second))
		}
	}
	return nil
}

// LeaseProblem says why this replica cannot ask the database for the
// chain's lease (the database refuses its writes: the disk is full, it
// is read-only or unreachable), or nil when its last try could.
func (f *Fetcher) LeaseProblem() error {
	h := f.core.health
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.leaseErr
}

// recordLease keeps the outcome of the last try for the lease.
func (c *core) recordLease(err error) {
	c.health.mu.Lock()
	defer c.health.mu.Unlock()
	c.health.leaseErr = err
}

// SyncProblem says why subscriptions that are SYNCING do not get
// synced, and since when: the last step failed (the node or the
// database cannot be read), or the node keeps no state at the block new
// subscriptions start from. ok is false when nothing holds them up.
func (f *Fetcher) SyncProblem() (reason string, since time.Time, ok bool) {
	h := f.core.health
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.lastErr != nil:
		return "fetching fails: " + h.lastErr.Error(), h.failingSince, true
	case h.syncWait != "":
		return h.syncWait, h.syncWaitSince, true
	}
	return "", time.Time{}, false
}

// InternalsSource says how internal movements are found: the trace API
// in use (TraceCallTracer or TraceParity), "none" when the node has none
// or traces are off (statements then say that internal movements are not
// covered), NoInternals on a chain whose family has no internal
// movements (its blocks list every movement), or "" before the node was
// asked.
func (f *Fetcher) InternalsSource() string {
	h := f.core.health
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !h.probed:
		return ""
	case h.internalsSource != "":
		return h.internalsSource
	case h.covered:
		return NoInternals
	}
	return "none"
}

// NoInternals is what InternalsSource says on a chain whose family has
// no internal movements (no chain.Internals: a UTXO chain), so none to
// find.
const NoInternals = "not needed"
