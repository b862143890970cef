package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ChromiumFlags are the flags every test browser starts with: headless, no
// sandbox (tests may run as root), and nothing that reaches the network on
// its own (the machine has no internet). Scrollbars are hidden so that a
// screenshot at 390 px shows all 390 px of the layout.
var ChromiumFlags = []string{
	"--headless",
	"--no-sandbox",
	"--disable-gpu",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	"--no-first-run",
	"--disable-quic",
	"--hide-scrollbars",
}

// Browser is a headless chromium started for one test.
type Browser struct {
	// DevToolsURL is the browser's DevTools websocket URL
	// (ws://127.0.0.1:PORT/devtools/browser/ID), for
	// chromedp.NewRemoteAllocator.
	DevToolsURL string
	// Dir is the fresh profile directory (--user-data-dir) under tb.TempDir().
	Dir string
}

// Chromium starts headless chromium ($WHARF_CHROMIUM, else chromium on
// PATH) with ChromiumFlags, a fresh --user-data-dir and
// a DevTools port chosen by the browser, and stops it when tb ends. A
// missing chromium skips tb, or fails it under WHARF_REQUIRE_ALL=1.
func Chromium(tb testing.TB) *Browser {
	tb.Helper()
	bin := os.Getenv("WHARF_CHROMIUM")
	if bin == "" {
		bin = Tool(tb, "chromium")
	}
	dir := tb.TempDir()
	b := &Browser{Dir: dir}
	args := append(append([]string(nil), ChromiumFlags...),
		"--user-data-dir="+dir,
		"--remote-debugging-address=127.0.0.1",
		"--remote-debugging-port=0",
		"about:blank",
	)
	cmd := exec.Command(bin, args...)
	// A process group, so that stopping the launcher script stops every
	// chromium process it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatalf("chromium: %v", err)
	}
	if err := cmd.Start(); err != nil {
		Need(tb, "chromium", fmt.Errorf("start %s: %w", bin, err))
	}
	exited := make(chan struct{})
	scanned := make(chan struct{})
	urls := make(chan string, 1)
	var log strings.Builder // written until scanned is closed
	go func() {
		defer close(scanned)
		// Chromium announces its DevTools endpoint on stderr; the rest of
		// what it prints is kept for the failure message.
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if u, ok := strings.CutPrefix(line, "DevTools listening on "); ok {
				select {
				case urls <- strings.TrimSpace(u):
				default:
				}
				continue
			}
			if log.Len() < 8<<10 {
				log.WriteString(line + "\n")
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() {
		<-scanned // Wait closes the pipe: read it to the end first
		cmd.Wait()
		close(exited)
	}()
	stop := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	tb.Cleanup(stop)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	select {
	case b.DevToolsURL = <-urls:
	case <-exited:
		tb.Fatalf("chromium exited before it listened: %v\n%s", cmd.ProcessState, log.String())
	case <-ctx.Done():
		tb.Fatalf("chromium: %v", errors.New("no DevTools endpoint within 60s"))
	}
	return b
}
