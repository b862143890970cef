package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
)

// served is an `addrd serve` a test runs in-process: what it printed up
// to its listening line, and a client of its API.
type served struct {
	base   string   // http://host:port
	lines  []string // stdout up to and including the listening line
	stderr *testenv.Buffer
	done   chan error
	cancel context.CancelFunc
	// openapi, when set, checks every answer (checkOpenAPI).
	openapi *openapiCheck
}

// startServe runs `addrd serve args...` and waits up to 60 s for it to
// listen. The server stops when the test ends, if stop was not called.
func startServe(tb testing.TB, args ...string) *served {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{stderr: &testenv.Buffer{}, done: make(chan error, 1), cancel: cancel}
	stdout := &lines{ch: make(chan string, 64)}
	go func() {
		s.done <- newApp(stdout, s.stderr).RunContext(ctx, append([]string{"addrd", "serve", "--listen", "127.0.0.1:0"}, args...))
	}()
	tb.Cleanup(func() {
		if s.cancel != nil {
			s.stop()
		}
	})
	timeout := time.After(60 * time.Second)
	for s.base == "" {
		select {
		case line := <-stdout.ch:
			s.lines = append(s.lines, line)
			if base, ok := strings.CutPrefix(line, "addrd listening on "); ok {
				s.base = base
			}
		case err := <-s.done:
			tb.Fatalf("serve ended: %v\n%s", err, s.stderr)
		case <-timeout:
			tb.Fatalf("serve printed no listening line in 60 s\n%s", s.stderr)
		}
	}
	return s
}

// printed returns the rest of each line printed before listening that
// starts with prefix.
func (s *served) printed(prefix string) []string {
	var out []string
	for _, l := range s.lines {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			out = append(out, v)
		}
	}
	return out
}

// do sends a request with the API key id:secret and returns the status
// and body of the answer.
func (s *served) do(tb testing.TB, key, method, path string) (int, []byte) {
	tb.Helper()
	id, secret, _ := strings.Cut(key, ":")
	req, err := http.NewRequest(method, s.base+path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.SetBasicAuth(id, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	s.check(tb, req, resp, b)
	return resp.StatusCode, b
}

// stop stops the server gracefully and returns how serve ended.
func (s *served) stop() error {
	s.cancel()
	s.cancel = nil
	return <-s.done
}
