package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Process is a server a test runs: one executable, its output appended
// to a log file, ready once a probe answers, stopped with SIGTERM or
// killed. The node starters (geth, op-geth, btcd, litecoind) run theirs
// through it.
type Process struct {
	// Log is the file the process's standard output and error go to.
	Log string

	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartProcess starts bin with args, its output appended to log, and
// polls ready every tick until it returns nil (a readiness wait, not
// synchronisation within a test). If the process exits first, or is not
// ready after 60 s, it is killed and the error quotes the end of its log.
func StartProcess(log string, tick time.Duration, ready func(context.Context) error, bin string, args ...string) (*Process, error) {
	p := &Process{Log: log, name: filepath.Base(bin)}
	logf, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", p.name, err)
	}
	p.done = make(chan struct{})
	go func() { p.cmd.Wait(); logf.Close(); close(p.done) }()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		if ready(ctx) == nil {
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited at start: %s", p.name, p.LogTail(2000))
		case <-ctx.Done():
			p.Kill()
			return nil, fmt.Errorf("%s not ready after 60s: %s", p.name, p.LogTail(2000))
		case <-t.C:
		}
	}
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Stop sends SIGTERM and waits for the process to exit, killing it
// after grace.
func (p *Process) Stop(grace time.Duration) {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// Kill stops the process at once (SIGKILL), as a crash would, and waits
// for it to exit.
func (p *Process) Kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// LogTail is the last n bytes of the process's log.
func (p *Process) LogTail(n int) string {
	b, _ := os.ReadFile(p.Log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
