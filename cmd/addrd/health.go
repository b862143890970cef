package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
)

// health reads each chain's leadership and lag for the API's /healthz
// (api.ChainReporter): a chain is degraded when its fetching fails (the
// node, or no leader for longer than the lease TTL). It also collects the
// chain metrics (addrd_chain_*) from the same reading. The fetch fields
// (fetchers, self, ttl) are set by startWorkers, before serving.
type health struct {
	db       *store.DB
	chains   []string
	fetchers []chainFetcher // this replica's; none with --fetch=false
	self     string         // this replica's holder name
	ttl      time.Duration
	// stallAfter is the fetchers' StallAfter: a leader whose report
	// says it has not advanced for longer is degraded.
	stallAfter time.Duration
	started    time.Time

	leaderDesc, leftDesc, lagDesc, leadingDesc *prometheus.Desc

	mu   sync.Mutex
	read time.Time // when last was read; it is reused for 250 ms
	last map[string]api.ChainHealth
}

var _ api.ChainReporter = (*health)(nil)

func newHealth(db *store.DB, chains []chain) *health {
	h := &health{db: db, started: time.Now(), stallAfter: fetch.DefaultStallAfter,
		leaderDesc: prometheus.NewDesc("addrd_chain_leader_info", "1, labelled with the replica that holds the chain's fetch lease (empty: none).",
			[]string{"chain", "leader"}, nil),
		leftDesc: prometheus.NewDesc("addrd_chain_lease_seconds_left", "How long the chain's fetch lease runs unless renewed; negative: expired that long ago.",
			[]string{"chain"}, nil),
		lagDesc: prometheus.NewDesc("addrd_chain_lag_blocks", "The node's latest block, as the leader last saw it, minus the last block stored.",
			[]string{"chain"}, nil),
		leadingDesc: prometheus.NewDesc("addrd_chain_leading", "1 when this replica holds the chain's fetch lease.",
			[]string{"chain"}, nil),
	}
	for _, c := range chains {
		h.chains = append(h.chains, c.Name)
	}
	return h
}

// ChainHealth implements api.ChainReporter.
func (h *health) ChainHealth(ctx context.Context) (map[string]api.ChainHealth, error) {
	return h.states(ctx)
}

// leaseProblem is why this replica's fetcher of chain cannot ask for
// the lease, nil when it can or does not fetch.
func (h *health) leaseProblem(chain string) error {
	for _, f := range h.fetchers {
		if f.chain == chain {
			return f.f.LeaseProblem()
		}
	}
	return nil
}

// states reads every chain's state, at most four times a second.
func (h *health) states(ctx context.Context) (map[string]api.ChainHealth, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last != nil && time.Since(h.read) < 250*time.Millisecond {
		return h.last, nil
	}
	out := make(map[string]api.ChainHealth, len(h.chains))
	for _, name := range h.chains {
		s, err := h.state(ctx, name)
		if err != nil {
			return nil, err
		}
		out[name] = s
	}
	h.last, h.read = out, time.Now()
	return out, nil
}

func (h *health) state(ctx context.Context, chain string) (api.ChainHealth, error) {
	var s api.ChainHealth
	l, err := h.db.ChainLease(ctx, chain)
	switch {
	case errors.Is(err, query.ErrNotFound):
		if up := time.Since(h.started); up > h.ttl {
			s.Problem = fmt.Sprintf("no replica has fetched %s yet (this one has run %s)", chain, up.Round(time.Second))
			if err := h.leaseProblem(chain); err != nil {
				s.Problem += ": this replica cannot take the lease: " + err.Error()
			}
			s.SyncProblem, s.SyncProblemSince = s.Problem, h.started
		}
	case err != nil:
		return s, err
	default:
		s.LeaseGeneration, s.LeaseSecondsLeft, s.NodeHead = l.Generation, l.Left.Seconds(), l.Head
		if l.Left > 0 {
			s.Leader, s.ThisReplica = l.Holder, l.Holder == h.self
			// The leader's own report, which every replica reads: what
			// fails, and when it last advanced (by the database's clock,
			// not the node head it last recorded).
			switch stall := h.stallAfter + h.ttl/3; {
			case l.Problem != "":
				s.Problem = "leader " + l.Holder + ": " + l.Problem
			case l.Progress > stall:
				s.Problem = fmt.Sprintf("leader %s: has not advanced for %s", l.Holder, l.Progress.Round(time.Second))
			}
		} else if -l.Left > h.ttl {
			s.Problem = fmt.Sprintf("no replica has held the lease of %s for %s", chain, (-l.Left).Round(time.Second))
			if err := h.leaseProblem(chain); err != nil {
				s.Problem += ": this replica cannot take it: " + err.Error()
			}
			s.SyncProblem, s.SyncProblemSince = s.Problem, time.Now().Add(l.Left)
		}
	}
	stop, err := h.db.ChainStop(ctx, chain)
	if err != nil {
		return s, err
	}
	if stop.Stopped() {
		s.Problem = fmt.Sprintf("fetching %s stopped since %s: %s", chain, stop.Since.Format(time.RFC3339), stop.Reason)
		s.SyncProblem, s.SyncProblemSince = s.Problem, stop.Since
	}
	switch id, err := h.db.ChainIdentity(ctx, chain); {
	case errors.Is(err, query.ErrNotFound): // not fetched yet
	case err != nil:
		return s, err
	default:
		s.ChainID = id.ID
		switch n, ok, evm := query.NetworkOf(id.ID); {
		case ok:
			s.Network, s.Fees, s.Exact, s.ExactNote = n.Name, n.Fees, n.Exact, n.Note
		case evm:
			s.Exact = query.ExactRules
		}
	}
	cp, ok, err := h.db.Checkpoint(ctx, chain)
	if err != nil {
		return s, err
	}
	if ok {
		s.StoredHead = cp.Number
		if s.NodeHead > 0 {
			// Never below zero: the node's head is the leader's last
			// reading, older than the block it stored since (L1).
			s.LagBlocks = max(0, int64(s.NodeHead)-int64(cp.Number))
		}
	}
	for _, cf := range h.fetchers {
		if cf.chain != chain {
			continue
		}
		if err := cf.f.Health(); err != nil && s.Problem == "" {
			s.Problem = err.Error()
		}
		if reason, since, ok := cf.f.SyncProblem(); ok && s.SyncProblem == "" {
			s.SyncProblem, s.SyncProblemSince = reason, since
		}
		if cf.f.InternalsSource() == "none" {
			s.Uncovered = "no trace API: internal transfers are not covered"
		}
	}
	return s, nil
}

// Describe sends the chain metrics' descriptions.
func (h *health) Describe(ch chan<- *prometheus.Desc) {
	ch <- h.leaderDesc
	ch <- h.leftDesc
	ch <- h.lagDesc
	ch <- h.leadingDesc
}

// Collect reads the chains' states (at most four times a second) into metrics;
// nothing when the database does not answer.
func (h *health) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	states, err := h.states(ctx)
	if err != nil {
		return
	}
	for name, s := range states {
		leading := 0.0
		if s.ThisReplica {
			leading = 1
		}
		ch <- prometheus.MustNewConstMetric(h.leaderDesc, prometheus.GaugeValue, 1, name, s.Leader)
		ch <- prometheus.MustNewConstMetric(h.leftDesc, prometheus.GaugeValue, s.LeaseSecondsLeft, name)
		ch <- prometheus.MustNewConstMetric(h.lagDesc, prometheus.GaugeValue, float64(s.LagBlocks), name)
		ch <- prometheus.MustNewConstMetric(h.leadingDesc, prometheus.GaugeValue, leading, name)
	}
}
