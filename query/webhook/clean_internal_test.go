package webhook

import (
	"context"
	"net"
	"net/url"
	"strings"
	"testing"
)

// TestCleanError: a failed attempt's error names what the requester can
// act on, never the server's own resolver or the request line.
func TestCleanError(t *testing.T) {
	dial := func(err error) error {
		return &url.Error{Op: "Post", URL: "https://hooks.example.com/x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: err}}
	}
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"no such host", dial(&net.DNSError{Err: "no such host", Name: "hooks.example.com", Server: "10.0.0.2:53", IsNotFound: true}),
			"lookup hooks.example.com: no such host"},
		{"resolver timeout", dial(&net.DNSError{Err: "i/o timeout", Name: "hooks.example.com", Server: "[fd00::53]:53", IsTimeout: true}),
			"lookup hooks.example.com: i/o timeout (timed out)"},
		{"server misbehaving", dial(&net.DNSError{Err: "server misbehaving", Name: "hooks.example.com", Server: "127.0.0.53:53"}),
			"lookup hooks.example.com: server misbehaving"},
		{"deadline", &url.Error{Op: "Post", URL: "https://hooks.example.com/x", Err: context.DeadlineExceeded}, "timed out"},
		{"refused", dial(&net.AddrError{Err: "connection refused", Addr: "203.0.113.9:443"}), "dial tcp: address 203.0.113.9:443: connection refused"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := cleanError(tt.err)
			if got != tt.want {
				t.Errorf("cleanError = %q, want %q", got, tt.want)
			}
			for _, secret := range []string{"10.0.0.2", "fd00::53", "127.0.0.53", "Post", "/x"} {
				if strings.Contains(got, secret) {
					t.Errorf("cleanError = %q shows %q", got, secret)
				}
			}
		})
	}
}
