package evm

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
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/ethereum/go-ethereum/rpc"

	"github.com/wharfhq/wharf/query"
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

// secrets are the parts of a node URL that may be secret, as they may
// appear in text: the userinfo's name and password, each path segment,
// each query key's value, the fragment, each as written in the URL and
// decoded, path- and query-escaped; and the userinfo as a basic
// Authorization header carries it. Parts shorter than minSecret are
// left: no key is that short, and "v3" or "1" are in any text.
type secrets []string

const minSecret = 3

func urlSecrets(raw string) secrets {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var parts []string
	if u.User != nil {
		parts = append(parts, u.User.Username())
		if p, ok := u.User.Password(); ok {
			parts = append(parts, p)
		}
	}
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		parts = append(parts, seg)
		if d, err := url.PathUnescape(seg); err == nil {
			parts = append(parts, d)
		}
	}
	for _, kv := range strings.Split(u.RawQuery, "&") {
		_, v, _ := strings.Cut(kv, "=")
		parts = append(parts, v)
		if d, err := url.QueryUnescape(v); err == nil {
			parts = append(parts, d)
		}
	}
	parts = append(parts, u.EscapedFragment(), u.Fragment, u.Opaque)
	if u.User != nil {
		// As a gateway may echo the Authorization header.
		p, _ := u.User.Password()
		parts = append(parts, base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+p)))
	}
	var out secrets
	add := func(p string) {
		if len(p) >= minSecret && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, p := range parts {
		add(p)
		add(url.PathEscape(p))
		add(url.QueryEscape(p))
		add(strings.ToLower(url.QueryEscape(p))) // %2f as well as %2F
	}
	// The longest first: a secret inside another is replaced with it.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// scrub replaces every secret in text with "redacted".
func (s secrets) scrub(text string) string {
	for _, p := range s {
		text = strings.ReplaceAll(text, p, "redacted")
	}
	return text
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
// HTTP 401 Unauthorized, an answer cut short or not JSON, or the node's
// JSON-RPC error code and message.
func reason(err error, sec secrets) string {
	var (
		herr HTTPError
		rerr rpc.Error
		nerr net.Error
		serr *json.SyntaxError
		terr *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return "timeout"
	case errors.As(err, &herr):
		return "HTTP " + strconv.Itoa(herr.StatusCode) + " " + http.StatusText(herr.StatusCode)
	case errors.As(err, &rerr):
		// The node's text is data: made text, and cut.
		msg := query.ChainText(sec.scrub(rerr.Error()), 0)
		if r := []rune(msg); len(r) > 200 {
			msg = string(r[:200]) + "…"
		}
		return "node error " + strconv.Itoa(rerr.ErrorCode()) + ": " + msg
	case errors.Is(err, io.ErrUnexpectedEOF):
		// The node answered, and its answer stopped mid-way.
		return "the node's answer was cut short"
	case errors.As(err, &serr), errors.As(err, &terr):
		return "the node's answer is not valid JSON-RPC"
	case errors.As(err, &nerr), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return "node unreachable"
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return "node unreachable"
	}
	return "node error: " + sec.scrub(strings.TrimSpace(err.Error()))
}

// HTTPError is go-ethereum's error for a non-2xx HTTP answer.
type HTTPError = rpc.HTTPError
