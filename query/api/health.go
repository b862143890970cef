package api

// The health endpoint.

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// ChainHealth is a chain's fetching as /healthz shows it: its leadership
// and lag, read from the database so that every replica, fetching or not,
// says the same.
type ChainHealth struct {
	// ChainID is the chain's CAIP-2 chain ID as the database records it
	// ("eip155:1"); empty until the chain is first fetched.
	ChainID string `json:"chain_id,omitempty"`
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
	// Network, Fees, Exact and ExactNote are the chain's network in
	// addrd's table (query.Network), by the chain ID recorded for it: its
	// fee model and how far addrd's books on it are proven; Exact is
	// known_rules and the rest empty for a chain ID not in the table, all
	// empty before the chain ID is known.
	Network   string `json:"network,omitempty"`
	Fees      string `json:"fees,omitempty"`
	Exact     string `json:"exact,omitempty"`
	ExactNote string `json:"exact_note,omitempty"`
	// Uncovered says, on a replica that fetches the chain from a node
	// that cannot list the movements inside transactions (an EVM node
	// without a trace API), what the books do not cover. /healthz writes
	// it as "untraced", and lists such chains under "traces".
	Uncovered string `json:"untraced,omitempty"`
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

// healthDeadline is how long /healthz waits for the database: a frozen
// one (a backend that neither answers nor lets its connection close)
// is 503 after it, whatever the driver does with the cancellation.
const healthDeadline = 2 * time.Second

// healthAnswer is what /healthz answers: the status and the body.
type healthAnswer struct {
	code int
	body any
}

// healthz answers 503 when the database does not answer within
// healthDeadline. Else 200: "ok", or "degraded" naming the chains whose
// fetching fails (a ChainHealth with a Problem), with each chain's
// leader and lag; the API still serves what is stored, so a failing
// fetch must not take replicas out of a load balancer.
//
// The reading runs apart from the request, one at a time: a database
// that hangs holds one reading, not one goroutine per probe.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), healthDeadline)
	defer cancel()
	select {
	case s.healthTurn <- struct{}{}:
	case <-ctx.Done():
		// A reading is still running since a probe before this one.
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "the database has not answered for " + healthDeadline.String()})
		return
	}
	done := make(chan healthAnswer, 1)
	go func() {
		defer func() { <-s.healthTurn }()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healthDeadline)
		defer cancel()
		done <- s.readHealth(rctx)
	}()
	select {
	case a := <-done:
		writeJSON(w, a.code, a.body)
	case <-ctx.Done():
		s.log.WarnContext(ctx, "health check: the database does not answer", "deadline", healthDeadline)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "the database has not answered for " + healthDeadline.String()})
	}
}

// readHealth reads what /healthz answers.
func (s *Server) readHealth(ctx context.Context) healthAnswer {
	if err := s.store.Ping(ctx); err != nil {
		s.log.WarnContext(ctx, "health check failed", "err", err)
		return healthAnswer{http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": dbReason(err)}}
	}
	if s.health == nil {
		return healthAnswer{http.StatusOK, map[string]string{"status": "ok"}}
	}
	states, err := s.health.ChainHealth(ctx)
	if err != nil {
		// The database answered the ping: what it stores is served.
		s.log.WarnContext(ctx, "health check: the chains' state", "err", err)
		return healthAnswer{http.StatusOK, map[string]string{"status": "ok"}}
	}
	status, failing, uncovered := "ok", make(map[string]string), make(map[string]string)
	for name, c := range states {
		if c.Problem != "" {
			status, failing[name] = "degraded", c.Problem
		}
		if c.Uncovered != "" {
			uncovered[name] = c.Uncovered
		}
	}
	body := map[string]any{"status": status, "chains": states}
	if len(failing) > 0 {
		body["fetch"] = failing
	}
	if len(uncovered) > 0 {
		body["traces"] = uncovered
	}
	return healthAnswer{http.StatusOK, body}
}

// dbReason says in a few words why the database failed a ping.
func dbReason(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "the database has not answered for " + healthDeadline.String()
	}
	return "the database does not answer"
}
