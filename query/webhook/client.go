package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Policy says which endpoint URLs and addresses may be used.
type Policy struct {
	// AllowHTTP lets endpoints use http:// (development); else https only.
	AllowHTTP bool
	// AllowPrivate lets deliveries reach loopback, private, link-local
	// and other non-public addresses (tests, private deployments).
	AllowPrivate bool
}

// ErrBlockedAddress: a delivery would dial an address the policy refuses.
var ErrBlockedAddress = errors.New("address not allowed for webhooks (loopback, private, link-local or reserved)")

// CheckURL checks an endpoint URL against the policy as far as it can
// be without dialling: an absolute https (or allowed http) URL with a
// host, no credentials or fragment, and, for a literal IP, a public one.
// A name is checked where it matters: on every address it resolves to,
// when dialled.
func (p Policy) CheckURL(raw string) error {
	if len(raw) > 2048 {
		return errors.New("the URL is longer than 2048 bytes")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return errors.New("want an absolute https:// URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && p.AllowHTTP:
	case u.Scheme == "http":
		return errors.New("want https:// (this server refuses http:// endpoints; addrd serve --webhook-allow-http is for development)")
	default:
		return fmt.Errorf("the scheme %s: is not https", u.Scheme)
	}
	if u.User != nil || u.Fragment != "" {
		return errors.New("the URL may carry neither credentials nor a fragment")
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil && !p.AllowPrivate && blocked(a) {
		return fmt.Errorf("%s: %w", host, ErrBlockedAddress)
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		if !p.AllowPrivate {
			return fmt.Errorf("%s: %w", host, ErrBlockedAddress)
		}
	}
	return nil
}

// nonPublic are the ranges no webhook reaches unless AllowPrivate, beyond
// what netip classifies (loopback, private, link-local, multicast,
// unspecified).
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated): ::127.0.0.1 is loopback to some stacks
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated (SIIT): embeds an IPv4
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: may embed any IPv4
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local NAT64
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4: embeds an IPv4
	netip.MustParsePrefix("2001::/32"),       // Teredo
	netip.MustParsePrefix("100::/64"),        // discard
}

// blocked reports whether a is not a public unicast address: loopback,
// private (RFC 1918, fc00::/7), link-local (169.254.0.0/16 with the
// cloud metadata address, fe80::/10), multicast, unspecified, or a range
// of nonPublic; an IPv4-mapped IPv6 address is judged as its IPv4, and
// every other IPv6 form that embeds an IPv4 address (IPv4-compatible,
// IPv4-translated, NAT64, 6to4, Teredo) is refused whatever it embeds.
func blocked(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return true
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// control is the dialer's check of the address it is about to connect
// to: after DNS, for every address tried, so that a name resolving to a
// private address (or rebinding to one) is refused.
func (p Policy) control(_, address string, _ syscall.RawConn) error {
	if p.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook dial %s: %w", address, err)
	}
	if blocked(ap.Addr()) {
		return fmt.Errorf("webhook dial %s: %w", ap.Addr(), ErrBlockedAddress)
	}
	return nil
}

// Client is the HTTP client of deliveries: the policy checked on each
// dialled address, no proxy from the environment, no redirects followed,
// and a deadline for each attempt.
func (p Policy) Client(timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, Control: p.control}
	t := &http.Transport{
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    5 * time.Second,
		ResponseHeaderTimeout:  timeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 16 << 10,
	}
	return &http.Client{
		Transport: t,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a 3xx is the answer, and a failure
		},
	}
}
