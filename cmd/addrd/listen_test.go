package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeListenTaken: with the port taken, serve --dev fails with the
// bind error alone, saying which flag and variable choose another (it
// was "dev chain: deploy token: ... context canceled" under make run).
func TestServeListenTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, cmd := range [][]string{
		{"serve", "--dev", "--db", filepath.Join(t.TempDir(), "addrd.db"), "--listen", ln.Addr().String()},
		{"receive", "--secret", "whsec_" + strings.Repeat("A", 43) + "=", "--listen", ln.Addr().String()},
	} {
		_, _, err := run(t, cmd...)
		want := "choose a free address with --listen ADDR or $ADDRD_"
		if err == nil || !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "dev chain") {
			t.Errorf("%s: err = %v, want the bind error and %q", cmd[0], err, want)
		}
	}
}

// TestStartErrAfterSignal: a start-up step that failed only because a
// signal ended the context ("dev chain: deploy token: context canceled",
// what make run printed after stopping addrd) is no error; the same
// failure without a signal, or another failure, is.
func TestStartErrAfterSignal(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	canceled := fmt.Errorf("dev chain: deploy token: %w", context.Canceled)
	stopped, stop := context.WithCancel(context.Background())
	stop()
	if err := startErr(stopped, log, canceled); err != nil {
		t.Errorf("after a signal: %v, want nil", err)
	}
	if err := startErr(context.Background(), log, canceled); err == nil {
		t.Error("context canceled without a signal: nil, want the error")
	}
	if err := startErr(stopped, log, errors.New("dev chain: no such contract")); err == nil {
		t.Error("another failure after a signal: nil, want the error")
	}
}
