package shell

import (
	"bufio"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
)

// LogFlags are the --log-level and --log-format flags of a serve command,
// read from envPrefix+"_LOG_LEVEL" and envPrefix+"_LOG_FORMAT" too.
func LogFlags(envPrefix string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "log-level", Value: "info", EnvVars: []string{envPrefix + "_LOG_LEVEL"},
			Usage: "log `LEVEL`: debug, info, warn or error"},
		&cli.StringFlag{Name: "log-format", Value: "text", EnvVars: []string{envPrefix + "_LOG_FORMAT"},
			Usage: "log `FORMAT`: text or json"},
	}
}

// NewLogger builds the process logger from the LogFlags values, writing
// to w through a buffer flushed every 200ms: a write per access-log line
// would cost a system call per request, more than answering a redirect
// does. Call close before exiting, to stop the flusher and write the
// rest. A value the flags do not accept is a UsageError.
//
// Errors are logged under the key "err" in both commands and every
// package; a nil *slog.Logger in a package's configuration discards.
func NewLogger(w io.Writer, level, format string) (log *slog.Logger, close func() error, err error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, nil, Usagef("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	if format != "text" && format != "json" {
		return nil, nil, Usagef("--log-format %q: want text or json", format)
	}
	b := newLogBuffer(w, 200*time.Millisecond)
	var h slog.Handler = slog.NewTextHandler(b, opts)
	if format == "json" {
		h = slog.NewJSONHandler(b, opts)
	}
	return slog.New(h), b.Close, nil
}

// logBuffer batches the log. Lines reach the output within the flush
// interval, and all of them on Close.
type logBuffer struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

func newLogBuffer(w io.Writer, every time.Duration) *logBuffer {
	b := &logBuffer{w: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				b.flush()
			case <-b.stop:
				return
			}
		}
	}()
	return b
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Write(p)
}

func (b *logBuffer) flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Flush()
}

// Close stops the flusher and writes what is buffered.
func (b *logBuffer) Close() error {
	close(b.stop)
	<-b.done
	return b.flush()
}
