package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// chainState is a chain's leadership and lag as /healthz shows it, read
// from the database so that every replica, fetching or not, says the same.
type chainState struct {
	// Leader is the replica holding the chain's lease (host:pid); empty
	// when none does.
	Leader string `json:"leader"`
	// ThisReplica is true on the leader.
	ThisReplica bool `json:"this_replica"`
	// LeaseGeneration counts the leaders the chain has had.
	LeaseGeneration int64 `json:"lease_generation"`
	// LeaseSecondsLeft is how long the lease runs unless renewed;
	// negative: it expired that long ago.
	LeaseSecondsLeft float64 `json:"lease_seconds_left"`
	// NodeHead is the node's latest block as the leader last saw it,
	// StoredHead the last block stored, LagBlocks the difference.
	NodeHead   uint64 `json:"node_head"`
	StoredHead uint64 `json:"stored_head"`
	LagBlocks  int64  `json:"lag_blocks"`
	// Problem says why the chain is degraded; empty when it is not.
	Problem string `json:"problem,omitempty"`
	// Untraced says, on a replica that fetches the chain from a node
	// without a trace API, that internal transfers are not covered.
	Untraced string `json:"untraced,omitempty"`
}

// health answers GET /healthz: 200 "ok", or 200 "degraded" naming the
// chains whose fetching fails (the node, or no leader for longer than the
// lease TTL), with each chain's leader and lag; the API still serves what
// is stored, so a failing fetch must not take replicas out of a load
// balancer. The database being away is the API's 503. It also collects
// the chain metrics (addrd_chain_*) from the same reading.
type health struct {
	next     http.Handler
	db       *store.DB
	chains   []string
	fetchers []chainFetcher // this replica's; none with --fetch=false
	self     string         // this replica's holder name
	ttl      time.Duration
	started  time.Time

	leaderDesc, leftDesc, lagDesc, leadingDesc *prometheus.Desc

	mu   sync.Mutex
	read time.Time // when last was read; it is reused for 250 ms
	last map[string]chainState
}

func newHealth(next http.Handler, db *store.DB, chains []chain, fetchers []chainFetcher, self string, ttl time.Duration) *health {
	h := &health{next: next, db: db, fetchers: fetchers, self: self, ttl: ttl, started: time.Now(),
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

func (h *health) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Path != "/healthz" {
		h.next.ServeHTTP(w, r)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if h.db.Ping(ctx) != nil {
		h.next.ServeHTTP(w, r) // the API's 503
		return
	}
	states, err := h.states(ctx)
	if err != nil {
		h.next.ServeHTTP(w, r)
		return
	}
	status, failing, untraced := "ok", make(map[string]string), make(map[string]string)
	for name, s := range states {
		if s.Problem != "" {
			status, failing[name] = "degraded", s.Problem
		}
		if s.Untraced != "" {
			untraced[name] = s.Untraced
		}
	}
	body := map[string]any{"status": status, "chains": states}
	if len(failing) > 0 {
		body["fetch"] = failing
	}
	if len(untraced) > 0 {
		body["traces"] = untraced
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(body)
}

// states reads every chain's state, at most four times a second.
func (h *health) states(ctx context.Context) (map[string]chainState, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last != nil && time.Since(h.read) < 250*time.Millisecond {
		return h.last, nil
	}
	out := make(map[string]chainState, len(h.chains))
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

func (h *health) state(ctx context.Context, chain string) (chainState, error) {
	var s chainState
	l, err := h.db.ChainLease(ctx, chain)
	switch {
	case errors.Is(err, query.ErrNotFound):
		if up := time.Since(h.started); up > h.ttl {
			s.Problem = fmt.Sprintf("no replica has fetched %s yet (this one has run %s)", chain, up.Round(time.Second))
		}
	case err != nil:
		return s, err
	default:
		s.LeaseGeneration, s.LeaseSecondsLeft, s.NodeHead = l.Generation, l.Left.Seconds(), l.Head
		if l.Left > 0 {
			s.Leader, s.ThisReplica = l.Holder, l.Holder == h.self
		} else if -l.Left > h.ttl {
			s.Problem = fmt.Sprintf("no replica has held the lease of %s for %s", chain, (-l.Left).Round(time.Second))
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
		if cf.f.Traces() == "none" {
			s.Untraced = "no trace API: internal transfers are not covered"
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
