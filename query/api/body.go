package api

// Request bodies are read before a store turn is taken: bounded, within
// a deadline, so that a client trickling its body holds its own
// connection and nothing the other requesters need.

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// maxBody bounds a request body: the largest an endpoint reads (a
// webhook's, 16 KiB), with room. An endpoint's own bound still applies.
const maxBody = 64 << 10

// DefaultBodyTimeout is Config.BodyTimeout when left zero.
const DefaultBodyTimeout = 10 * time.Second

// readBody reads r's body, at most maxBody+1 bytes of it, within
// s.bodyTimeout, and gives it to the handler from memory. A body not
// read in time is answered 408 and the connection closed; one that ends
// early (the client gave up) is a 400, neither is the server's fault.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	rc := http.NewResponseController(w)
	// A writer without deadlines (a test's recorder) reads without one.
	_ = rc.SetReadDeadline(time.Now().Add(s.bodyTimeout))
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	_ = rc.SetReadDeadline(time.Time{})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		return &Error{Code: codeDeadlineExceeded, HTTPStatus: http.StatusRequestTimeout,
			Message: "the request body did not arrive within " + s.bodyTimeout.String()}
	case err != nil && r.Context().Err() != nil:
		return r.Context().Err() // the client has gone
	case err != nil:
		w.Header().Set("Connection", "close")
		return errorf(codeInvalidArgument, "cannot read the request body: %s", quote(err.Error()))
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return nil
}
