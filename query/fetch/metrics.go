package fetch

// The fetcher's Prometheus metrics.

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// fetchMetrics are a fetcher's Prometheus metrics.
type fetchMetrics struct {
	nodeErrors, errors, blocks, txs, reorgs prometheus.Counter
	head, checkpoint, tracked, lastSuccess  prometheus.Gauge
	leader                                  prometheus.Gauge
	internalsErrors, unreconciled           prometheus.Counter
	internalsRead                           prometheus.Gauge
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
	m.internalsErrors = counter("trace_errors_total", "Trace calls to the node that failed (retried: the checkpoint waits).")
	m.unreconciled = counter("unreconciled_total", "Balances read from the node that disagreed with the statement's running balance.")
	m.internalsRead = gauge("traced", "1 when internal movements are read from the node's trace API, 0 when they are not covered.")
	if reg == nil {
		return nil
	}
	reg = prometheus.WrapRegistererWith(prometheus.Labels{"chain": chain}, reg)
	for _, c := range []prometheus.Collector{m.nodeErrors, m.errors, m.blocks, m.txs, m.reorgs,
		m.head, m.checkpoint, m.tracked, m.lastSuccess, m.leader, m.internalsErrors, m.unreconciled, m.internalsRead} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("fetcher metrics: %w", err)
		}
	}
	return nil
}
