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
	// the new leader reports (issue 21, L1).
	f.core.clearHealth()
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

// renew renews l every third of LeaseTTL until lead ends. It returns when
// the lease is lost: a renewal says so, or none has succeeded for
// LeaseTTL by this process's clock (the database unreachable: then
// another replica may hold it already). It runs on real time, not on
// Clock: the lease expires by the database's real clock whatever the
// fetcher's pacing.
func (c *core) renew(lead context.Context, l query.Lease) {
	ttl := c.cfg.LeaseTTL
	valid := time.Now().Add(ttl)
	t := time.NewTimer(ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-lead.Done():
			return
		case <-t.C:
			t.Reset(ttl / 3)
		case <-c.headRead:
			// A new lease records no head (acquiring sets it to 0):
			// record the first one read at once, so that /healthz on
			// every replica shows the node's head within a step of the
			// takeover, not a third of the TTL later. Later heads wait
			// for the next renewal.
			if l.Head != 0 || c.nodeHead() == 0 {
				continue
			}
		}
		start := time.Now()
		nl, err := c.cfg.Store.RenewLease(lead, l, ttl, c.nodeHead())
		switch {
		case err == nil:
			valid = start.Add(ttl)
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
