package fetch

import (
	"context"
	"fmt"

	"github.com/wharfhq/wharf/query"
)

// Traces: which trace API, if any, internal movements are read from.

// Traces says how internal movements are found: the trace API in use
// (TraceCallTracer or TraceParity), "none" when the node has none or
// traces are off (statements then say that internal movements are not
// covered), or "" before the node was asked.
func (f *Fetcher) Traces() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case !f.probed:
		return ""
	case f.traceAPI == "":
		return "none"
	}
	return f.traceAPI
}

// Probe asks the node, once, for its trace API and chooses how internal
// movements are found (Config.Traces), saying it in the log. The
// first step does it when it was not done; addrd serve does it at start.
// Errors: ErrUnavailable when the node cannot be asked; an error when
// traces are on and the node has no trace API.
func (f *Fetcher) Probe(ctx context.Context) error { return f.probe(ctx) }

// probe is Probe.
func (f *Fetcher) probe(ctx context.Context) error {
	if f.probed {
		return nil
	}
	api := ""
	if f.cfg.Traces != TracesOff {
		if t, ok := f.cfg.Source.(query.Tracer); ok {
			var err error
			if api, err = t.ProbeTraces(ctx); err != nil {
				return f.nodeErr(fmt.Errorf("fetch %s: probing the trace API: %w", f.cfg.Chain, err))
			}
			f.tracer = t
		}
		if api == "" && f.cfg.Traces == TracesOn {
			return fmt.Errorf("fetch %s: traces are on but the node serves no trace API (debug_traceBlockByNumber with callTracer, or trace_block)", f.cfg.Chain)
		}
	}
	f.mu.Lock()
	f.traceAPI, f.probed = api, true
	f.mu.Unlock()
	switch {
	case api != "":
		f.metrics.traced.Set(1)
		f.log.Info("fetcher: internal movements from the node's trace API", "api", api)
	case f.cfg.Traces == TracesOff:
		f.log.Warn("fetcher: traces are off: internal movements (contract payouts, self-destructs) are not covered; statements say traced: false")
	default:
		f.log.Warn("fetcher: the node has no trace API (debug_traceBlockByNumber, trace_block): internal movements (contract payouts, self-destructs) are not covered; statements say traced: false")
	}
	return nil
}
