// Package clientip finds the address of the client behind a request: the
// connection's peer, or, when that peer is a reverse proxy the operator
// trusts (--trusted-proxy CIDR), the address the proxies recorded in
// X-Forwarded-For. Both servers key their limits and log lines on it.
package clientip

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Resolver finds a request's client address. The zero Resolver (or nil)
// trusts no proxy: the client is always the connection's peer.
type Resolver struct {
	trusted []netip.Prefix
}

// New returns a Resolver that believes X-Forwarded-For from peers in the
// trusted prefixes.
func New(trusted []netip.Prefix) *Resolver {
	return &Resolver{trusted: append([]netip.Prefix(nil), trusted...)}
}

// Parse returns a Resolver trusting the given CIDRs (the values of
// --trusted-proxy); a bare address stands for itself alone (/32, /128).
func Parse(cidrs []string) (*Resolver, error) {
	var ps []netip.Prefix
	for _, c := range cidrs {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		p, err := parsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: want a CIDR such as 10.0.0.0/8 or an address", c)
		}
		ps = append(ps, p)
	}
	return New(ps), nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap().WithZone("")
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// Trusted reports whether a is in one of the trusted prefixes.
func (r *Resolver) Trusted(a netip.Addr) bool {
	if r == nil {
		return false
	}
	for _, p := range r.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ClientAddr is the address of the client that sent req. It is the peer
// (req.RemoteAddr) unless the peer is trusted; then X-Forwarded-For is
// read from right to left, skipping trusted hops, and the first address
// that is not trusted is the client. Each proxy appends the address it
// saw, so everything left of the first untrusted hop was written by the
// client and is ignored. When every hop is trusted the leftmost wins; a
// malformed entry ends the walk at the last good hop. An unparsable
// RemoteAddr gives the zero Addr.
func (r *Resolver) ClientAddr(req *http.Request) netip.Addr {
	peer := parseHost(req.RemoteAddr)
	if !peer.IsValid() || !r.Trusted(peer) {
		return peer
	}
	return r.walk(peer, req.Header.Values("X-Forwarded-For"))
}

// walk reads the X-Forwarded-For field lines (in order received) right to
// left from the trusted peer.
func (r *Resolver) walk(peer netip.Addr, lines []string) netip.Addr {
	client := peer
	for i := len(lines) - 1; i >= 0; i-- {
		rest := lines[i]
		for {
			var hop string
			if j := strings.LastIndexByte(rest, ','); j >= 0 {
				hop, rest = rest[j+1:], rest[:j]
			} else {
				hop, rest = rest, ""
			}
			hop = strings.TrimSpace(hop)
			if hop != "" {
				a := parseHost(hop)
				if !a.IsValid() {
					return client
				}
				client = a
				if !r.Trusted(a) {
					return client
				}
			}
			if rest == "" {
				break
			}
		}
	}
	return client
}

// parseHost reads an address with or without a port ("192.0.2.1",
// "192.0.2.1:443", "2001:db8::1", "[2001:db8::1]:443"), dropping any IPv6
// zone and unmapping an IPv4-mapped IPv6 address; the zero Addr if s is
// none of these.
func parseHost(s string) netip.Addr {
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
				return parseHost(s[1 : len(s)-1])
			}
			return netip.Addr{}
		}
		a = ap.Addr()
	}
	return a.Unmap().WithZone("")
}

// Group is the network a limit counts a client address in: the address
// itself for IPv4, its /64 for IPv6, since one IPv6 host usually holds a
// whole /64 and could otherwise take a fresh address for each request.
// The zero Addr gives the zero Prefix.
func Group(a netip.Addr) netip.Prefix {
	if !a.IsValid() {
		return netip.Prefix{}
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}
