package eth

// Node URLs carry secrets: providers put the API key in the path or the
// query, some in the userinfo. None of it may reach a log line, /healthz,
// a metric or an error. Over HTTP the JSON-RPC client is given the URL
// without them (scheme and host only), and a transport puts them back
// on each request as it leaves; errors, which net/http writes with the
// request's URL, can then name no more than the host. Node errors are
// further cut to a short reason: node unreachable, timeout, an HTTP
// status, or the node's own JSON-RPC error.

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"

	"github.com/ethereum/go-ethereum/rpc"
)

// RedactURL is a node URL fit to show: scheme and host, with the
// userinfo, path and query replaced by "redacted"; "?" when it is no URL
// (no scheme or no host: "//KEY" has the key for its host).
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "?"
	}
	out := u.Scheme + "://"
	if u.User != nil {
		out += "redacted@"
	}
	out += u.Host
	if u.Path != "" && u.Path != "/" || u.RawPath != "" || u.Opaque != "" {
		out += "/redacted"
	}
	if u.RawQuery != "" || u.ForceQuery {
		out += "?redacted"
	}
	if u.Fragment != "" {
		out += "#redacted"
	}
	return out
}

// splitSecret returns the URL the JSON-RPC client is given over HTTP
// (scheme and host) and the full one its transport sends to; ok is false
// for other schemes, which are dialled as they are.
func splitSecret(raw string) (public string, full *url.URL, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", nil, false
	}
	return u.Scheme + "://" + u.Host + "/", u, true
}

// secretTransport sends each request to the full node URL, with its
// userinfo as HTTP basic authentication, as the client would have.
type secretTransport struct {
	base http.RoundTripper
	full *url.URL
}

func (t secretTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	u := *t.full
	u.User = nil
	r.URL = &u
	r.Host = u.Host
	if t.full.User != nil && r.Header.Get("Authorization") == "" {
		pass, _ := t.full.User.Password()
		r.SetBasicAuth(t.full.User.Username(), pass)
	}
	return t.base.RoundTrip(r)
}

// nodeError is a node's error shown as a short reason; the cause stays
// in the chain for errors.Is and errors.As but is never printed.
type nodeError struct {
	reason string
	err    error
}

func (e *nodeError) Error() string { return e.reason }
func (e *nodeError) Unwrap() error { return e.err }

// reason is the short reason of a node error: timeout, node unreachable,
// HTTP 401 Unauthorized, or the node's JSON-RPC error code and message.
func reason(err error) string {
	var (
		herr HTTPError
		rerr rpc.Error
		nerr net.Error
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return "timeout"
	case errors.As(err, &herr):
		return "HTTP " + strconv.Itoa(herr.StatusCode) + " " + http.StatusText(herr.StatusCode)
	case errors.As(err, &rerr):
		msg := rerr.Error()
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return "node error " + strconv.Itoa(rerr.ErrorCode()) + ": " + msg
	case errors.As(err, &nerr), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return "node unreachable"
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return "node unreachable"
	}
	return "node error: " + strings.TrimSpace(err.Error())
}

// HTTPError is go-ethereum's error for a non-2xx HTTP answer.
type HTTPError = rpc.HTTPError
