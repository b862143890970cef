package site

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/wharfhq/wharf/internal/rpcstatus"
	"github.com/wharfhq/wharf/publish"
)

// Codes of google.rpc.Code used in error bodies.
const (
	codeInvalidArgument   = int(rpcstatus.InvalidArgument)
	codeNotFound          = int(rpcstatus.NotFound)
	codePermissionDenied  = int(rpcstatus.PermissionDenied)
	codeResourceExhausted = int(rpcstatus.ResourceExhausted)
	codeUnimplemented     = int(rpcstatus.Unimplemented)
	codeInternal          = int(rpcstatus.Internal)
	codeUnavailable       = int(rpcstatus.Unavailable)
	codeUnauthenticated   = int(rpcstatus.Unauthenticated)
)

// Error is the JSON body of every error response.
type Error struct {
	Code    int    `json:"code"`    // google.rpc.Code
	Message string `json:"message"` // for people
	Status  string `json:"status"`  // the code's name, e.g. NotFound
}

// httpError is an error with the status and code it answers.
type httpError struct {
	status  int
	code    int
	message string
	err     error // the cause, logged but not shown
}

func (e *httpError) Error() string {
	if e.err != nil {
		return e.message + ": " + e.err.Error()
	}
	return e.message
}

func (e *httpError) Unwrap() error { return e.err }

func notFound(msg string) error { return &httpError{http.StatusNotFound, codeNotFound, msg, nil} }

func badRequest(msg string) error {
	return &httpError{http.StatusBadRequest, codeInvalidArgument, msg, nil}
}

// storeError classifies an error of the store: a missing object is 404, a
// malformed key 400, and anything else means the store cannot serve now.
func storeError(err error) error {
	switch {
	case errors.Is(err, publish.ErrNotFound):
		return &httpError{http.StatusNotFound, codeNotFound, "not found", err}
	case errors.Is(err, publish.ErrInvalidKey):
		return &httpError{http.StatusBadRequest, codeInvalidArgument, "malformed path", err}
	case errors.Is(err, context.Canceled):
		return err
	}
	return &httpError{http.StatusServiceUnavailable, codeUnavailable, "the release store is unavailable; try again later", err}
}

// writeError answers err as JSON with its HTTP status. Anything it does not
// recognise is an internal error to the client and logged in full.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpError
	var expired *ExpiredError
	switch {
	case errors.As(err, &he):
	case errors.As(err, &expired):
		he = &httpError{http.StatusUnauthorized, codeUnauthenticated, expired.Error() + msgNewToken, err}
	case errors.Is(err, ErrUnauthenticated):
		he = &httpError{http.StatusUnauthorized, codeUnauthenticated, "missing or invalid credentials: send an access token (Authorization: Bearer) or an API key (curl -u KEY:)", err}
	case errors.Is(err, ErrForbidden):
		he = &httpError{http.StatusForbidden, codePermissionDenied, "the permission level of your organisations does not include this download", err}
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads an answer.
		return
	default:
		he = &httpError{http.StatusInternalServerError, codeInternal, "internal error", err}
	}
	if he.status >= 500 || he.err != nil && he.status != http.StatusNotFound {
		s.log.LogAttrs(r.Context(), levelFor(he.status), "request failed",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", he.status), slog.Any("err", err))
	}
	h := w.Header()
	for _, k := range []string{"Content-Disposition", "ETag", "Last-Modified", "Accept-Ranges", "Content-Encoding"} {
		h.Del(k)
	}
	if he.status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", challenge(expired))
	}
	if he.status == http.StatusServiceUnavailable && h.Get("Retry-After") == "" {
		// The store or the auth database is away or busy for now.
		h.Set("Retry-After", "1")
	}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	body, _ := json.Marshal(Error{Code: he.code, Message: he.message, Status: rpcstatus.Code(he.code).String()})
	body = append(body, '\n')
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(he.status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// msgNewToken follows an expired token's message: how to get a new one.
const msgNewToken = " (access tokens last 24 hours): get a new one (treasury token create, or wharf token create --user NAME on the server) or use an API key (curl -u KEY:)"

// challenge is the WWW-Authenticate of a 401: both schemes, and for an
// expired bearer token RFC 6750's invalid_token with the expiry.
func challenge(expired *ExpiredError) string {
	if expired == nil {
		return `Basic realm="wharf", Bearer`
	}
	return `Basic realm="wharf", Bearer error="invalid_token", error_description="` + expired.Error() + `"`
}

// levelFor is the level a failed request is logged at: a refused
// credential (401) is routine, beside its access line; other refusals
// warn, server failures are errors.
func levelFor(status int) slog.Level {
	switch {
	case status >= 500:
		return slog.LevelError
	case status == http.StatusUnauthorized:
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// tooMany answers 429 with the wait before the next request may pass.
func tooMany(wait time.Duration) error {
	return &httpError{http.StatusTooManyRequests, codeResourceExhausted,
		"too many requests; retry in " + strconv.Itoa(int(wait/time.Second)+1) + "s", nil}
}
