package api

// Authentication: the API key of every /v1 request, behind the limits.

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/wharfhq/wharf/internal/clientip"
	"github.com/wharfhq/wharf/query"
)

// authenticated checks the HTTP basic credentials (API_ID:API_SECRET) of
// every request before h, and writes h's error. The limits come first:
// a client or key over its limit is answered 429 without a database turn.
func (s *Server) authenticated(h func(*Server, http.ResponseWriter, *http.Request, query.Account) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := s.authenticate(w, r, h)
		if err != nil && r.Context().Err() != nil && errors.Is(err, r.Context().Err()) {
			return // the client has gone; nobody reads an answer
		}
		if err != nil {
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
	select {
	case s.turns <- struct{}{}:
		ri.turn = true
		defer func() {
			if ri.turn { // a long poll gives it back while it waits (outsideTurn)
				<-s.turns
			}
		}()
	case <-r.Context().Done():
		return r.Context().Err() // the client has gone
	}
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
	return h(s, w, r, acct)
}
