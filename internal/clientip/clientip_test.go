package clientip_test

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/clientip"
)

func request(remote string, xff ...string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, "http://example.test/", nil)
	r.RemoteAddr = remote
	for _, v := range xff {
		r.Header.Add("X-Forwarded-For", v)
	}
	return r
}

func TestClientAddr(t *testing.T) {
	r, err := clientip.Parse([]string{"10.0.0.0/8", "127.0.0.1", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		remote string
		xff    []string
		want   string
	}{
		{"NoHeader", "192.0.2.7:5555", nil, "192.0.2.7"},
		{"UntrustedPeerHeaderIgnored", "192.0.2.7:5555", []string{"198.51.100.1"}, "192.0.2.7"},
		{"TrustedPeer", "127.0.0.1:5555", []string{"198.51.100.1"}, "198.51.100.1"},
		{"TrustedPeerNoHeader", "127.0.0.1:5555", nil, "127.0.0.1"},
		{"ClientSpoofsLeftOfProxy", "127.0.0.1:5555", []string{"203.0.113.9, 198.51.100.1"}, "198.51.100.1"},
		{"SkipsTrustedHops", "127.0.0.1:5555", []string{"203.0.113.9, 198.51.100.1, 10.1.2.3, 10.9.9.9"}, "198.51.100.1"},
		{"SeveralFieldLines", "127.0.0.1:5555", []string{"203.0.113.9, 198.51.100.1", "10.1.2.3"}, "198.51.100.1"},
		{"AllTrustedLeftmostWins", "127.0.0.1:5555", []string{"10.1.1.1, 10.2.2.2"}, "10.1.1.1"},
		{"MalformedStopsAtLastGoodHop", "127.0.0.1:5555", []string{"198.51.100.1, bogus, 10.1.2.3"}, "10.1.2.3"},
		{"MalformedRightmost", "127.0.0.1:5555", []string{"198.51.100.1, bogus"}, "127.0.0.1"},
		{"EmptyEntriesSkipped", "127.0.0.1:5555", []string{"198.51.100.1,, ,"}, "198.51.100.1"},
		{"EntryWithPort", "127.0.0.1:5555", []string{"198.51.100.1:8443"}, "198.51.100.1"},
		{"IPv6Entry", "127.0.0.1:5555", []string{"[2001:db8::1]:443"}, "2001:db8::1"},
		{"IPv6BareEntry", "127.0.0.1:5555", []string{"2001:db8::1"}, "2001:db8::1"},
		{"IPv6TrustedPeer", "[fd00::1]:5555", []string{"2001:db8::2"}, "2001:db8::2"},
		{"IPv4MappedPeer", "[::ffff:127.0.0.1]:5555", []string{"198.51.100.1"}, "198.51.100.1"},
		{"ZoneDropped", "[fe80::1%eth0]:5555", nil, "fe80::1"},
		{"BadRemoteAddr", "@", []string{"198.51.100.1"}, "invalid IP"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.ClientAddr(request(tt.remote, tt.xff...)); got.String() != tt.want {
				t.Errorf("ClientAddr = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestZeroResolverTrustsNobody(t *testing.T) {
	var r *clientip.Resolver
	if got := r.ClientAddr(request("127.0.0.1:1", "198.51.100.1")); got.String() != "127.0.0.1" {
		t.Errorf("nil Resolver: ClientAddr = %s, want the peer", got)
	}
	if got := new(clientip.Resolver).ClientAddr(request("127.0.0.1:1", "198.51.100.1")); got.String() != "127.0.0.1" {
		t.Errorf("zero Resolver: ClientAddr = %s, want the peer", got)
	}
}

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in      []string
		trusted string
		ok      bool
	}{
		{[]string{"10.0.0.0/8"}, "10.200.0.1", true},
		{[]string{"10.1.2.3/8"}, "10.200.0.1", true}, // host bits ignored
		{[]string{"192.0.2.1"}, "192.0.2.1", true},
		{[]string{"::ffff:192.0.2.0/120"}, "192.0.2.9", true},
		{[]string{"2001:db8::/32"}, "2001:db8:1::1", true},
		{[]string{" 10.0.0.0/8 ", ""}, "10.0.0.1", true},
		{[]string{"10.0.0.0/33"}, "", false},
		{[]string{"example.com"}, "", false},
		{[]string{"10.0.0.0/8/8"}, "", false},
	} {
		r, err := clientip.Parse(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("Parse(%q) error = %v, want ok %v", tt.in, err, tt.ok)
			continue
		}
		if err == nil && !r.Trusted(netip.MustParseAddr(tt.trusted)) {
			t.Errorf("Parse(%q) does not trust %s", tt.in, tt.trusted)
		}
	}
}

func TestGroup(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"192.0.2.7", "192.0.2.7/32"},
		{"::ffff:192.0.2.7", "192.0.2.7/32"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"},
	} {
		if got := clientip.Group(netip.MustParseAddr(tt.in)); got.String() != tt.want {
			t.Errorf("Group(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
	if got := clientip.Group(netip.Addr{}); got.IsValid() {
		t.Errorf("Group(zero) = %s, want the zero Prefix", got)
	}
}

// FuzzClientAddr: whatever the header, the answer is the peer or one of
// the header's own entries, never a panic, and an untrusted peer's header
// is never read.
func FuzzClientAddr(f *testing.F) {
	f.Add("127.0.0.1:1", "203.0.113.9, 198.51.100.1, 10.1.2.3")
	f.Add("127.0.0.1:1", "[2001:db8::1]:443,bogus,,")
	f.Add("192.0.2.1:1", "198.51.100.1")
	f.Add("[fd00::1]:1", "fe80::1%eth0, ::ffff:10.0.0.1")
	r, err := clientip.Parse([]string{"10.0.0.0/8", "127.0.0.0/8", "fd00::/8"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, remote, xff string) {
		req := request(remote, xff)
		got := r.ClientAddr(req)
		peer := r.ClientAddr(request(remote))
		if got == peer {
			return
		}
		if !r.Trusted(peer) {
			t.Fatalf("untrusted peer %s: got %s from the header %q", peer, got, xff)
		}
		if got.Zone() != "" || got.Is4In6() {
			t.Fatalf("got %s: zone or mapped address kept", got)
		}
		if !inHeader(got, xff) {
			t.Fatalf("got %s, neither the peer %s nor an entry of %q", got, peer, xff)
		}
		if g := clientip.Group(got); !g.Contains(got) {
			t.Fatalf("Group(%s) = %s does not contain it", got, g)
		}
	})
}

// inHeader reports whether a is one of the comma-separated entries of xff.
func inHeader(a netip.Addr, xff string) bool {
	for _, e := range strings.Split(xff, ",") {
		e = strings.Trim(strings.TrimSpace(e), "[]")
		if ap, err := netip.ParseAddrPort(strings.TrimSpace(e)); err == nil && ap.Addr().Unmap().WithZone("") == a {
			return true
		}
		if h, _, ok := strings.Cut(e, "]:"); ok {
			e = h
		}
		if b, err := netip.ParseAddr(e); err == nil && b.Unmap().WithZone("") == a {
			return true
		}
	}
	return false
}
