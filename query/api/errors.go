package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/wharfhq/wharf/internal/rpcstatus"
	"github.com/wharfhq/wharf/query"
)

// code is a gRPC status code, the "code" of an error body.
type code = rpcstatus.Code

// The codes this API answers with.
const (
	codeInvalidArgument   = rpcstatus.InvalidArgument
	codeDeadlineExceeded  = rpcstatus.DeadlineExceeded
	codeNotFound          = rpcstatus.NotFound
	codePermissionDenied  = rpcstatus.PermissionDenied
	codeResourceExhausted = rpcstatus.ResourceExhausted
	codeOutOfRange        = rpcstatus.OutOfRange
	codeUnimplemented     = rpcstatus.Unimplemented
	codeInternal          = rpcstatus.Internal
	codeUnavailable       = rpcstatus.Unavailable
	codeUnauthenticated   = rpcstatus.Unauthenticated
)

// Error is an error the client is meant to read: a code and a message.
type Error struct {
	Code    code
	Message string
	// HTTPStatus overrides the code's mapping: 405 Method Not Allowed,
	// which grpc-gateway would answer as 501, and 408 Request Timeout
	// for a body that did not arrive in time (DeadlineExceeded, else 504).
	HTTPStatus int
	// RetryAfter, when positive, is sent as Retry-After (a 429).
	RetryAfter time.Duration
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code.String(), e.Message) }

func errorf(c code, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

// errorBody is the JSON of every error response.
type errorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

// toError maps any error to what the client sees: an *Error as it is, the
// query errors to their codes, anything else to "internal error".
func toError(err error) (e *Error, internal bool) {
	switch {
	case errors.As(err, &e):
		return e, false
	case errors.Is(err, query.ErrUnavailable):
		return errorf(codeUnavailable, "the service is unavailable; try again later"), false
	case errors.Is(err, query.ErrUnauthenticated):
		return errorf(codeUnauthenticated, "missing or invalid API credentials"), false
	case errors.Is(err, query.ErrNotFound):
		return errorf(codeNotFound, "not found"), false
	case errors.Is(err, query.ErrTooManySubscriptions):
		return errorf(codeResourceExhausted, "the requester has as many subscriptions as it may have; unsubscribe from some first"), false
	}
	return errorf(codeInternal, "internal error"), true
}

// writeError writes err as an error body: the one place errors become
// HTTP. Internal errors are logged in full with the request id.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e, internal := toError(err)
	if internal {
		s.log.ErrorContext(r.Context(), "internal error", "request_id", requestID(r), "method", r.Method,
			"path", r.URL.Path, "err", err)
	} else if e.Code == codeUnavailable {
		s.log.WarnContext(r.Context(), "unavailable", "request_id", requestID(r), "err", err)
	}
	status := e.HTTPStatus
	if status == 0 {
		status = e.Code.HTTPStatus()
	}
	if e.Code == codeUnauthenticated {
		w.Header().Set("WWW-Authenticate", `Basic realm="addrd", charset="UTF-8"`)
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", retryAfter(e.RetryAfter))
	}
	writeJSON(w, status, errorBody{Code: int(e.Code), Message: e.Message, Status: e.Code.String()})
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own types are written; this is a programming error.
		status = http.StatusInternalServerError
		b = []byte(`{"code":13,"message":"internal error","status":"Internal"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// logger returns l or a logger that drops everything.
func logger(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}
