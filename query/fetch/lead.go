package fetch

// Leadership: one replica fetches each chain, holding the chain's lease
// in the database. It renews the lease every third of LeaseTTL; every
// write it makes carries the lease (WithLease) and is refused once the
// lease has gone, so a leader that was frozen, partitioned or stuck past
// its lease writes nothing when it resumes. Followers try to take the
// lease every fifth of LeaseTTL.

import (
	"context"
	"errors"
	"time"

	"github.com/wharfhq/wharf/query"
)

// lead fetches while l is held: steps in this goroutine, renewals in
// another; it returns when the lease is lost or ctx ends, and then gives
// the lease up.
func (f *Fetcher) lead(ctx context.Context, l query.Lease) {
	lead, cancel := context.WithCancel(query.WithLease(ctx, l))
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		defer cancel()
		f.core.renew(lead, l)
	}()
	// A new leader starts from what the store holds: another may have
	// written since this process last led.
	f.follow.tokens = make(map[string][]string)
	f.core.log.Info("fetcher: leading", "holder", l.Holder, "generation", l.Generation)
	f.core.metrics.leader.Set(1)
	// Rows the last leader stored without a block time (an older binary,
	// in a rolling upgrade) would fall outside every time range.
	switch n, err := f.core.cfg.Store.FillBlockTimes(lead, l.Chain); {
	case err != nil && lead.Err() == nil:
		f.core.log.Warn("fetcher: filling block times", "err", err)
	case n > 0:
		f.core.log.Info("fetcher: filled the block times of rows stored without one", "rows", n)
	}
	f.loop(lead)
	cancel()
	<-renewed
	f.core.metrics.leader.Set(0)
	// A replica that no longer leads fetches nothing: the outcome of its
	// last step (often the lost lease itself, or the cancellation of
	// the step it cut short) says nothing of the chain's fetching, which
	// the new leader reports.
	f.core.clearHealth()
	// Another leader may move, or rewind, the finality marks meanwhile.
	f.follow.marked = finalityMark{}
	if ctx.Err() != nil {
		// Shutting down: hand the chain over at once.
		rctx, done := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer done()
		if err := f.core.cfg.Store.ReleaseLease(rctx, l); err != nil {
			f.core.log.Warn("fetcher: releasing the lease", "err", err)
		}
		return
	}
	f.core.log.Warn("fetcher: lost the lease", "generation", l.Generation)
}

// renew renews l every third of LeaseTTL until lead ends, with the
// leader's report (the node's head, its progress, what fails): at once
// when that changes, at most every renewGap. It returns when the lease
// is lost: a renewal says so, or none has succeeded for LeaseTTL by
// this process's clock (the database unreachable: then another replica
// may hold it already). It runs on real time, not on Clock: the lease
// expires by the database's real clock whatever the fetcher's pacing.
func (c *core) renew(lead context.Context, l query.Lease) {
	ttl := c.cfg.LeaseTTL
	gap := min(ttl/3, renewGap)
	valid := time.Now().Add(ttl)
	last := time.Now()
	t := time.NewTimer(gap)
	defer t.Stop()
	for {
		select {
		case <-lead.Done():
			return
		case <-t.C:
			t.Reset(gap)
		case <-c.headRead:
		}
		r := c.report()
		// The timed renewal every third of the TTL; sooner for news: the
		// first head read (a new lease records none), a problem that
		// starts or ends, a stall that shows.
		news := (l.Head == 0 && r.Head != 0) || r.Problem != l.Problem
		if !news && time.Since(last) < ttl/3 {
			continue
		}
		start := time.Now()
		nl, err := c.cfg.Store.RenewLease(lead, l, ttl, r)
		switch {
		case err == nil:
			valid, last = start.Add(ttl), start
			l = nl
		case errors.Is(err, query.ErrLeaseLost):
			c.log.Warn("fetcher: the lease was lost", "err", err)
			return
		case lead.Err() != nil:
			return
		case !time.Now().Before(valid):
			c.log.Warn("fetcher: no renewal for the lease's whole TTL: giving it up", "err", err)
			return
		default:
			c.log.Warn("fetcher: renewing the lease", "err", err)
		}
	}
}

// renewGap is the longest the renewal goes without looking at the
// leader's report: a stall shows on every replica within it.
const renewGap = time.Second
