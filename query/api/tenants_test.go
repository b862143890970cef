package api_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/webhook"
)

// tenants is an API on a real HTTP server (deadlines, blocking writes)
// with one store turn, a requester holding many subscriptions (a large
// page) and another.
type tenants struct {
	t        *testing.T
	srv      *httptest.Server
	db       *store.DB
	attacker key
	victim   key
	logbuf   *testenv.Buffer
	api      *api.Server
}

func newTenants(t *testing.T, dsn string, cfg api.Config) *tenants {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tn := &tenants{t: t, db: db, logbuf: &testenv.Buffer{}}
	cfg.Store, cfg.Chains, cfg.Syntax = db, []string{"ETH"}, evmSyntax("ETH")
	cfg.Logger = slog.New(slog.NewJSONHandler(tn.logbuf, nil))
	cfg.Webhooks = webhook.New(webhook.Config{Store: db, Policy: webhook.Policy{AllowHTTP: true, AllowPrivate: true}, Holder: "test"})
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 1
	}
	tn.api = api.New(cfg)
	tn.srv = httptest.NewServer(tn.api)
	t.Cleanup(tn.srv.Close)
	var account int64
	for i, k := range []*key{&tn.attacker, &tn.victim} {
		ak, secret, err := db.CreateAPIKey(ctx, []string{"attacker", "victim"}[i])
		if err != nil {
			t.Fatal(err)
		}
		*k = key{ak.ID, secret}
		if i == 0 {
			account = ak.AccountID
		}
	}
	for i := range 300 {
		if _, err := db.Subscribe(ctx, account, "ETH", fmt.Sprintf("0x%040x", 0xa0000+i)); err != nil {
			t.Fatal(err)
		}
	}
	return tn
}

func (k key) basic() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(k.id+":"+k.secret))
}

// dial opens a raw connection to the server, with a small receive
// buffer (set before it connects, so the window is small), closed at the
// test's end.
func (tn *tenants) dial() net.Conn {
	tn.t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048) })
	}}
	c, err := d.Dial("tcp", tn.srv.Listener.Addr().String())
	if err != nil {
		tn.t.Fatal(err)
	}
	tn.t.Cleanup(func() { c.Close() })
	return c
}

// victimRead is how long the victim's list of subscriptions takes, or
// the test fails after 3 s.
func (tn *tenants) victimRead() time.Duration {
	tn.t.Helper()
	req, _ := http.NewRequest("GET", tn.srv.URL+"/v1/addresses", nil)
	req.SetBasicAuth(tn.victim.id, tn.victim.secret)
	start := time.Now()
	resp, err := (&http.Client{Timeout: 3 * time.Second}).Do(req)
	if err != nil {
		tn.t.Fatalf("the victim's request: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tn.t.Fatalf("the victim's request: status %d", resp.StatusCode)
	}
	return time.Since(start)
}

// TestSlowBody: a body trickled (or never sent) holds no store turn: the
// other requester is answered meanwhile; the slow one gets 408 once the
// body timeout passes, and the log has no internal error.
func TestSlowBody(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		tn := newTenants(t, dsn, api.Config{BodyTimeout: 2 * time.Second})
		c := tn.dial()
		fmt.Fprintf(c, "POST /v1/webhooks HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", tn.attacker.basic())
		took := tn.victimRead()
		t.Logf("the victim answered in %s while a body was trickled", took)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("the slow body's answer: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Errorf("the slow body's answer: %d, want 408", resp.StatusCode)
		}
		if log := tn.logbuf.String(); strings.Contains(log, "internal error") {
			t.Errorf("a slow body logged as an internal error:\n%s", log)
		}
	})
}

// TestBodyCutShort: a body that ends before its length is the client's
// doing (a 400, or no answer to a client that has gone), never an
// internal error.
func TestBodyCutShort(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		tn := newTenants(t, dsn, api.Config{})
		c := tn.dial()
		fmt.Fprintf(c, "POST /v1/webhooks HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", tn.attacker.basic())
		c.(*net.TCPConn).CloseWrite()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				t.Errorf("a body cut short: %d, want 400 or none", resp.StatusCode)
			}
		}
		tn.srv.Close() // the handler has ended: its log is complete
		if log := tn.logbuf.String(); strings.Contains(log, "internal error") {
			t.Errorf("a body cut short logged as an internal error:\n%s", log)
		}
	})
}

// TestUnreadAnswers: pipelined requests whose answers are never read
// hold no store turn: the other requester is answered meanwhile.
func TestUnreadAnswers(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		tn := newTenants(t, dsn, api.Config{})
		for range 2 {
			c := tn.dial()
			var b strings.Builder
			for range 400 { // 12 MB of answers, more than the kernel's buffers hold
				fmt.Fprintf(&b, "GET /v1/addresses?page_size=1000 HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\n\r\n", tn.attacker.basic())
			}
			if _, err := c.Write([]byte(b.String())); err != nil {
				t.Fatal(err)
			}
			// The first byte of the answers: the server is writing them,
			// into a window of 2 KiB.
			if _, err := c.Read(make([]byte, 1)); err != nil {
				t.Fatal(err)
			}
		}
		// The server fills the kernel's buffers (4 MB) within a few hundred
		// answers: the victim reads for 1.5 s, from before until after.
		var slowest time.Duration
		for start := time.Now(); time.Since(start) < 1500*time.Millisecond; {
			slowest = max(slowest, tn.victimRead())
		}
		t.Logf("the victim's slowest answer while answers went unread: %s", slowest)
	})
}

// holdAPI is tenants with GET /hold, a handler that says who entered
// and waits for release to close.
func holdAPI(t *testing.T, dsn string, cfg api.Config) (tn *tenants, entered chan string, release chan struct{}) {
	entered, release = make(chan string, 100), make(chan struct{})
	tn = newTenants(t, dsn, cfg)
	tn.api.Handle("GET /hold", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _, _ := r.BasicAuth()
		entered <- id
		<-release
	}), true)
	return tn, entered, release
}

// hold sends GET /hold as k and returns the status.
func (tn *tenants) hold(k key) int {
	req, _ := http.NewRequest("GET", tn.srv.URL+"/hold", nil)
	req.SetBasicAuth(k.id, k.secret)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		tn.t.Error(err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestTurnsShared: a requester holds at most its share of the store's
// turns (half), and another requester's request is served before its
// waiting ones.
func TestTurnsShared(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		tn, entered, release := holdAPI(t, dsn, api.Config{MaxInFlight: 2})
		var wg sync.WaitGroup
		defer wg.Wait()
		defer close(release)
		for range 5 {
			wg.Go(func() { tn.hold(tn.attacker) })
		}
		if id := <-entered; id != tn.attacker.id {
			t.Fatalf("%s entered first", id)
		}
		wg.Go(func() { tn.hold(tn.victim) })
		select {
		case id := <-entered:
			if id != tn.victim.id {
				t.Fatal("the attacker's second request entered before the victim's: both turns to one requester")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the victim's request did not enter in 5 s: the attacker's requests hold the turns")
		}
	})
}

// TestRequestsPerKey: a requester with MaxRequestsPerKey requests at
// once is answered 429 at once for another; another requester is not.
func TestRequestsPerKey(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		tn, entered, release := holdAPI(t, dsn, api.Config{MaxInFlight: 4, TurnsPerKey: 4, MaxRequestsPerKey: 2})
		var wg sync.WaitGroup
		defer wg.Wait()
		defer close(release)
		for range 2 {
			wg.Go(func() { tn.hold(tn.attacker) })
			<-entered
		}
		if got := tn.hold(tn.attacker); got != http.StatusTooManyRequests {
			t.Errorf("a third request at once: %d, want 429", got)
		}
		wg.Go(func() { tn.hold(tn.victim) })
		if id := <-entered; id != tn.victim.id {
			t.Errorf("%s entered, want the victim", id)
		}
	})
}
