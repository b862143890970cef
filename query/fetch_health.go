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
	if reg == nil {
		return nil
	}
	reg = prometheus.WrapRegistererWith(prometheus.Labels{"chain": chain}, reg)
	for _, c := range []prometheus.Collector{m.nodeErrors, m.errors, m.blocks, m.txs, m.reorgs,
		m.head, m.checkpoint, m.tracked, m.lastSuccess, m.leader} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("fetcher metrics: %w", err)
		}
	}
	return nil
}
