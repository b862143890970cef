package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/query/webhook"
)

func TestCheckURL(t *testing.T) {
	prod := webhook.Policy{}
	dev := webhook.Policy{AllowHTTP: true}
	private := webhook.Policy{AllowHTTP: true, AllowPrivate: true}
	for _, tt := range []struct {
		url                string
		prod, dev, private bool // accepted by each policy
	}{
		{"https://hooks.example.com/addrd", true, true, true},
		{"https://hooks.example.com:8443/a?b=c", true, true, true},
		{"http://hooks.example.com/addrd", false, true, true},
		{"https://127.0.0.1/x", false, false, true},
		{"https://127.0.0.2/x", false, false, true},
		{"https://169.254.169.254/latest/meta-data/", false, false, true},
		{"https://[::1]/x", false, false, true},
		{"https://[::ffff:127.0.0.1]/x", false, false, true},
		{"https://[fd00:ec2::254]/x", false, false, true},
		{"https://[::127.0.0.1]/x", false, false, true},
		{"https://[::7f00:1]/x", false, false, true},
		{"https://[::10.0.0.1]/x", false, false, true},
		{"https://[::169.254.169.254]/x", false, false, true},
		{"https://[::8.8.8.8]/x", false, false, true},
		{"https://[::ffff:0:127.0.0.1]/x", false, false, true},
		{"https://[64:ff9b::127.0.0.1]/x", false, false, true},
		{"https://[2002:7f00:1::]/x", false, false, true},
		{"https://[::ffff:8.8.8.8]/x", true, true, true},
		{"https://[2606:4700::1111]/x", true, true, true},
		{"https://10.1.2.3/x", false, false, true},
		{"https://192.168.1.1/x", false, false, true},
		{"https://172.16.0.1/x", false, false, true},
		{"https://100.64.0.1/x", false, false, true},
		{"https://0.0.0.0/x", false, false, true},
		{"https://[fe80::1]/x", false, false, true},
		{"https://localhost/x", false, false, true},
		{"https://a.localhost/x", false, false, true},
		{"https://8.8.8.8/x", true, true, true},
		{"https://user:pw@hooks.example.com/", false, false, false},
		{"https://hooks.example.com/#frag", false, false, false},
		{"ftp://hooks.example.com/", false, false, false},
		{"hooks.example.com/x", false, false, false},
		{"https:///x", false, false, false},
		{"https://" + strings.Repeat("a", 3000), false, false, false},
	} {
		for i, p := range []webhook.Policy{prod, dev, private} {
			want := []bool{tt.prod, tt.dev, tt.private}[i]
			if err := p.CheckURL(tt.url); (err == nil) != want {
				t.Errorf("policy %+v CheckURL(%q) = %v, want accepted %v", p, tt.url, err, want)
			}
		}
	}
}

// TestClientRefusesPrivateAfterDNS: the check is on the address dialled,
// so a name that resolves to loopback (localhost, as any name could) is
// refused, and so is a literal one; with AllowPrivate both connect.
func TestClientRefusesPrivateAfterDNS(t *testing.T) {
	hit := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit <- struct{}{} }))
	defer srv.Close()
	port := srv.URL[strings.LastIndexByte(srv.URL, ':'):]
	for _, u := range []string{"http://localhost" + port + "/", srv.URL + "/", "http://[::ffff:127.0.0.1]" + port + "/", "http://[::127.0.0.1]" + port + "/"} {
		c := webhook.Policy{AllowHTTP: true}.Client(5 * time.Second)
		req, _ := http.NewRequestWithContext(context.Background(), "POST", u, nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s: connected", u)
		}
		if !errors.Is(err, webhook.ErrBlockedAddress) {
			t.Fatalf("%s: %v, want ErrBlockedAddress", u, err)
		}
		c = webhook.Policy{AllowHTTP: true, AllowPrivate: true}.Client(5 * time.Second)
		req, _ = http.NewRequestWithContext(context.Background(), "POST", u, nil)
		resp, err = c.Do(req)
		if err != nil && !strings.Contains(u, "::") { // the kernel may not route these
			t.Fatalf("%s with AllowPrivate: %v", u, err)
		}
		if err == nil {
			resp.Body.Close()
		}
	}
	if len(hit) == 0 {
		t.Fatal("AllowPrivate reached nothing")
	}
}
