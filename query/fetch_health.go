package query

// Health and metrics.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// nodeErr counts an error of the node.
func (f *Fetcher) nodeErr(err error) error {
	if err != nil && !errors.Is(err, context.Canceled) {
		f.metrics.nodeErrors.Inc()
	}
	return err
}

// record keeps the outcome of a step for Health and the metrics.
func (f *Fetcher) record(err error) {
	now := f.cfg.Clock.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		f.lastOK, f.lastErr, f.failingSince = now, nil, time.Time{}
		f.metrics.lastSuccess.Set(float64(now.UnixNano()) / 1e9)
		return
	}
	f.metrics.errors.Inc()
	if f.lastErr == nil {
		f.failingSince = now
	}
	f.lastErr = err
}

func (f *Fetcher) setCaughtUp(caughtUp bool, newest Block) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.caughtUp = caughtUp
	if !newest.Time.IsZero() {
		f.newest = newest.Time
	}
}

// Health reports whether fetching works: an error when the last step
// failed (the node or the database is unreachable), or when the fetcher
// is caught up with a node whose newest block is older than LagAfter.
func (f *Fetcher) Health() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lastErr != nil {
		return fmt.Errorf("fetching %s: failing since %s: %w", f.cfg.Chain, f.failingSince.UTC().Format(time.RFC3339), f.lastErr)
	}
	if f.cfg.LagAfter > 0 && f.caughtUp && !f.newest.IsZero() {
		if age := f.cfg.Clock.Now().Sub(f.newest); age > f.cfg.LagAfter {
			return fmt.Errorf("fetching %s: the node lags: its newest block is %s old", f.cfg.Chain, age.Round(time.Second))
		}
	}
	return nil
}

// fetchMetrics are a fetcher's Prometheus metrics.
type fetchMetrics struct {
	nodeErrors, errors, blocks, txs, reorgs prometheus.Counter
	head, checkpoint, tracked, lastSuccess  prometheus.Gauge
	leader                                  prometheus.Gauge
	traceErrors, unreconciled               prometheus.Counter
	traced                                  prometheus.Gauge
}

func (m *fetchMetrics) register(reg prometheus.Registerer, chain string) error {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "addrd", Subsystem: "fetch", Name: name, Help: help})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "addrd", Subsystem: "fetch", Name: name, Help: help})
	}
	m.nodeErrors = counter("node_errors_total", "Calls to the chain node that failed.")
	m.errors = counter("step_errors_total", "Fetch steps that failed (node or database).")
	m.blocks = counter("blocks_total", "Blocks scanned and stored.")
	m.txs = counter("transactions_total", "Transactions stored that touch tracked addresses.")
	m.reorgs = counter("reorgs_total", "Reorgs found under the checkpoint.")
	m.head = gauge("head_block", "The node's latest block number.")
	m.checkpoint = gauge("checkpoint_block", "The last block stored.")
	m.tracked = gauge("tracked_addresses", "Addresses with at least one subscription.")
	m.lastSuccess = gauge("last_success_timestamp_seconds", "When a fetch step last succeeded.")
	m.leader = gauge("leader", "1 while this process is the chain's fetcher.")
	m.traceErrors = counter("trace_errors_total", "Trace calls to the node that failed (retried: the checkpoint waits).")
	m.unreconciled = counter("unreconciled_total", "Balances read from the node that disagreed with the statement's running balance.")
	m.traced = gauge("traced", "1 when internal movements are read from the node's trace API, 0 when they are not covered.")
	if reg == nil {
		return nil
	}
	reg = prometheus.WrapRegistererWith(prometheus.Labels{"chain": chain}, reg)
	for _, c := range []prometheus.Collector{m.nodeErrors, m.errors, m.blocks, m.txs, m.reorgs,
		m.head, m.checkpoint, m.tracked, m.lastSuccess, m.leader, m.traceErrors, m.unreconciled, m.traced} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("fetcher metrics: %w", err)
		}
	}
	return nil
}

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
// movements are found (FetcherConfig.Traces), saying it in the log. The
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
		if t, ok := f.cfg.Source.(Tracer); ok {
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
