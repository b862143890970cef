package api

// Authentication: the API key of every /v1 request, behind the limits.

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/wharfhq/wharf/internal/clientip"
	"github.com/wharfhq/wharf/query"
)

// authenticated checks the HTTP basic credentials (API_ID:API_SECRET) of
// every request before h, and writes h's error. The limits come first:
// a client or key over its limit is answered 429 without a database turn.
// The body is read before a store turn is taken, and the answer written
// after it is given back (heldWriter).
func (s *Server) authenticated(h func(*Server, http.ResponseWriter, *http.Request, query.Account) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri := info(r)
		defer func() {
			if ri.leave != nil { // the answer is written: the key's request has ended
				ri.leave()
			}
		}()
		hw := &heldWriter{w: w, ri: ri}
		ri.held = hw
		err := s.authenticate(hw, r, h)
		switch {
		case err == nil:
			hw.flush()
		case r.Context().Err() != nil && errors.Is(err, r.Context().Err()):
			// the client has gone; nobody reads an answer
		case hw.status != 0:
			// The handler had answered: its answer stands.
			if _, internal := toError(err); internal {
				s.log.ErrorContext(r.Context(), "internal error after the answer", "request_id", ri.id, "err", err)
			}
			hw.flush()
		default:
			s.writeError(w, r, err)
		}
	})
}

var errBadCredentials = errorf(codeUnauthenticated, "missing or invalid API credentials: use HTTP basic auth with API_ID:API_SECRET")

func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, h func(*Server, http.ResponseWriter, *http.Request, query.Account) error) error {
	id, secret, ok := r.BasicAuth()
	if !ok || id == "" || len(id) > 128 || len(secret) > 256 {
		return errBadCredentials
	}
	ri := info(r)
	ri.apiID = id
	client := clientip.Group(ri.client)
	if wait := s.failsByClient.wait(client, s.now()); wait > 0 {
		s.limited.WithLabelValues("auth_failures_client").Inc()
		return tooMany(wait, "too many failed authentications from %s", client)
	}
	if wait := s.requestsByKey.wait(id, s.now()); wait > 0 {
		s.limited.WithLabelValues("key_rate").Inc()
		return tooMany(wait, "too many requests for API key %s", quote(id))
	}
	if err := s.readBody(w, r); err != nil {
		return err
	}
	ri.turnKey = id
	if err := s.takeTurn(r); err != nil {
		return err // the client has gone
	}
	defer s.giveTurn(r)
	acct, err := s.store.Authenticate(r.Context(), id, secret)
	if errors.Is(err, query.ErrUnauthenticated) {
		now := s.now()
		byClient, byKey := s.failsByClient.take(client, now), s.failsByKey.take(id, now)
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "authentication failed", slog.String("request_id", ri.id),
			slog.String("api_id", id), slog.String("client", ri.client.String()))
		switch {
		case byClient > 0:
			s.limited.WithLabelValues("auth_failures_client").Inc()
			return tooMany(byClient, "too many failed authentications from %s", client)
		case byKey > 0:
			s.limited.WithLabelValues("auth_failures_key").Inc()
			return tooMany(byKey, "too many failed authentications for API key %s", quote(id))
		}
		return errBadCredentials
	}
	if err != nil {
		return err
	}
	if wait := s.requestsByKey.take(id, s.now()); wait > 0 {
		s.limited.WithLabelValues("key_rate").Inc()
		return tooMany(wait, "too many requests for API key %s", quote(id))
	}
	if !s.inFlight.enter(id) {
		s.limited.WithLabelValues("key_concurrency").Inc()
		return tooMany(time.Second, "too many requests at once for API key %s (at most %d)", quote(id), s.inFlight.limit)
	}
	ri.leave = func() { s.inFlight.leave(id) }
	return h(s, w, r, acct)
}

// takeTurn waits for a store turn for r, in its requester's place.
func (s *Server) takeTurn(r *http.Request) error {
	ri := info(r)
	if err := s.turns.take(r.Context(), ri.turnKey); err != nil {
		return err
	}
	ri.turn = true
	return nil
}

// giveTurn gives r's store turn back, if it holds one.
func (s *Server) giveTurn(r *http.Request) {
	ri := info(r)
	if ri.turn {
		ri.turn = false
		s.turns.release(ri.turnKey)
	}
}
