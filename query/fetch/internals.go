package fetch

// Internals: which source (an EVM trace API), if any, internal
// movements are read from.

import (
	"context"
	"errors"
	"fmt"

	"github.com/wharfhq/wharf/query/chain"
)

// Probe asks the node, once, for its trace API and chooses how internal
// movements are found (Config.Internals), saying it in the log. The
// first step does it when it was not done; addrd serve does it at start.
// Errors: ErrUnavailable when the node cannot be asked; an error when
// traces are on and the node has no trace API.
func (f *Fetcher) Probe(ctx context.Context) error { return f.follow.probe(ctx) }

// probe is Probe.
func (f *follower) probe(ctx context.Context) error {
	if f.probed {
		return nil
	}
	api := ""
	var lacks error // why the node serves no internal movements
	in, internals := f.cfg.Reader.(chain.Internals)
	if f.cfg.Internals != InternalsOff && internals {
		var err error
		switch api, err = in.ProbeInternals(ctx); {
		case errors.Is(err, chain.ErrNotImplemented):
			api, lacks = "", err
		case err != nil:
			return f.nodeErr(fmt.Errorf("fetch %s: probing the node for internal movements: %w", f.cfg.Chain, err))
		}
		if lacks != nil && f.cfg.Internals == InternalsOn {
			return fmt.Errorf("fetch %s: internal movements are required (traces on): %w", f.cfg.Chain, lacks)
		}
	}
	// A family without internal movements lists every movement in its
	// Activity: its statements are complete (traced) without a trace API.
	f.facts.internalsSource, f.facts.covered, f.probed = api, api != "" || !internals, true
	if internals {
		in.UseInternals(api)
	}
	f.setInternals(api, f.facts.covered)
	switch {
	case api != "":
		f.metrics.internalsRead.Set(1)
		f.log.Info("fetcher: internal movements read from the node", "source", api)
	case !internals:
		f.log.Info("fetcher: the chain's family lists every movement in the blocks it reads: none inside transactions to find")
	case f.cfg.Internals == InternalsOff:
		f.log.Warn("fetcher: internal movements are off (traces off): not covered; statements say traced: false")
	default:
		f.log.Warn("fetcher: internal movements are not covered; statements say traced: false", "reason", lacks)
	}
	return nil
}
