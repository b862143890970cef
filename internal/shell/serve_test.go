package shell_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/shell"
)

// TestServeGraceful: when the context ends, a request in flight is
// answered in full within the grace, and Serve returns nil.
func TestServeGraceful(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		io.WriteString(w, "done")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- shell.Serve(ctx, srv, ln, time.Minute) }()
	got := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String())
		if err != nil {
			got <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- string(b)
	}()
	<-started
	cancel()
	// Shutdown closes the listener first: a new connection is refused
	// while the old request is still in flight.
	for {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			break
		}
		c.Close()
	}
	close(release)
	if b := <-got; b != "done" {
		t.Errorf("the request in flight got %q, want done", b)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
}

// TestServeGraceOver: a request still running after the grace is cut,
// and Serve returns without waiting for it.
func TestServeGraceOver(t *testing.T) {
	started := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done() // only the Close ends it
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- shell.Serve(ctx, srv, ln, time.Millisecond) }()
	failed := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String())
		if err == nil {
			resp.Body.Close()
		}
		failed <- err
	}()
	<-started
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
	if err := <-failed; err == nil {
		t.Error("the request cut at shutdown got an answer")
	}
}
