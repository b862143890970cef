package api

// The health endpoint.

import (
	"context"
	"net/http"
	"time"
)

// ChainHealth is a chain's fetching as /healthz shows it: its leadership
// and lag, read from the database so that every replica, fetching or not,
// says the same.
type ChainHealth struct {
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
	// SyncProblem says why SYNCING subscriptions of the chain are not
	// being synced, since SyncProblemSince; "" when nothing holds them
	// up (as far as this replica can tell). The subscription resource
	// shows it; /healthz does not repeat it.
	SyncProblem      string    `json:"-"`
	SyncProblemSince time.Time `json:"-"`
}

// ChainReporter reads every chain's ChainHealth, for /healthz.
type ChainReporter interface {
	ChainHealth(ctx context.Context) (map[string]ChainHealth, error)
}

// healthz answers 503 when the database does not answer. Else 200: "ok",
// or "degraded" naming the chains whose fetching fails (a ChainHealth
// with a Problem), with each chain's leader and lag; the API still serves what
// is stored, so a failing fetch must not take replicas out of a load
// balancer.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		s.log.WarnContext(ctx, "health check failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
		return
	}
	if s.health == nil {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return
	}
	states, err := s.health.ChainHealth(ctx)
	if err != nil {
		// The database answered the ping: what it stores is served.
		s.log.WarnContext(ctx, "health check: the chains' state", "err", err)
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return
	}
	status, failing, untraced := "ok", make(map[string]string), make(map[string]string)
	for name, c := range states {
		if c.Problem != "" {
			status, failing[name] = "degraded", c.Problem
		}
		if c.Untraced != "" {
			untraced[name] = c.Untraced
		}
	}
	body := map[string]any{"status": status, "chains": states}
	if len(failing) > 0 {
		body["fetch"] = failing
	}
	if len(untraced) > 0 {
		body["traces"] = untraced
	}
	writeJSON(w, http.StatusOK, body)
}
