package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Containerd is a containerd daemon (Debian's containerd 1.6) of a test:
// its root, state and socket in a temporary directory, the CRI plugin
// off, images unpacked with the native snapshotter. It needs root.
type Containerd struct {
	Socket string
	dir    string
}

// NewContainerd starts containerd until the test ends.
func NewContainerd(tb testing.TB) *Containerd {
	tb.Helper()
	bin, err := exec.LookPath("containerd")
	Need(tb, "containerd", err)
	if os.Geteuid() != 0 {
		Need(tb, "containerd", fmt.Errorf("containerd runs as root; this is uid %d", os.Geteuid()))
	}
	dir, err := os.MkdirTemp("", "ctrd")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	c := &Containerd{Socket: filepath.Join(dir, "c.sock"), dir: dir}
	conf := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[debug]
  address = ""
[metrics]
  address = ""
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), c.Socket, filepath.Join(dir, "t.sock"))
	file := filepath.Join(dir, "config.toml")
	writeConf(tb, file, conf)
	logPath := filepath.Join(dir, "containerd.log")
	logf, err := os.Create(logPath)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", file)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start containerd: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	tb.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if conn, err := (&net.Dialer{}).DialContext(ctx, "unix", c.Socket); err == nil {
			conn.Close()
			return c
		}
		select {
		case <-done:
			b, _ := os.ReadFile(logPath)
			tb.Fatalf("containerd exited at start:\n%s", b)
		case <-ctx.Done():
			b, _ := os.ReadFile(logPath)
			tb.Fatalf("containerd not listening on %s after 60s:\n%s", c.Socket, b)
		case <-tick.C:
		}
	}
}

// Ctr is a ctr command against this daemon, in namespace ns.
func (c *Containerd) Ctr(tb testing.TB, ns string, args ...string) *exec.Cmd {
	tb.Helper()
	bin := Tool(tb, "ctr")
	return exec.Command(bin, append([]string{"--address", c.Socket, "--namespace", ns}, args...)...)
}
