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

// Proxy is a web server (nginx or Caddy) of a test, running on loopback
// from a temporary directory: no root, nothing of the system's own
// configuration. It is stopped at cleanup.
type Proxy struct {
	Addr string // host:port it listens on
	Dir  string // its prefix: configuration, pid, logs, temporary files
	log  string
}

// NewNginx starts Debian's nginx with siteConf (http-level directives such
// as a server block, as for conf.d/) listening on addr, with its pid, logs
// and temporary files under a temporary prefix.
func NewNginx(tb testing.TB, addr, siteConf string) *Proxy {
	tb.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nginx"); serr == nil {
			bin, err = "/usr/sbin/nginx", nil
		}
	}
	Need(tb, "nginx", err)
	dir := tb.TempDir()
	p := &Proxy{Addr: addr, Dir: dir, log: filepath.Join(dir, "error.log")}
	// As root, the master would run its workers as nobody, who cannot
	// read the test's temporary directories (0700).
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;\n"
	}
	conf := fmt.Sprintf(user+`worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 512; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[1]s/site.conf;
}
`, dir)
	writeConf(tb, filepath.Join(dir, "nginx.conf"), conf)
	writeConf(tb, filepath.Join(dir, "site.conf"), siteConf)
	if out, err := exec.Command(bin, "-t", "-q", "-p", dir, "-c", filepath.Join(dir, "nginx.conf")).CombinedOutput(); err != nil {
		tb.Fatalf("nginx -t: %v\n%s", err, out)
	}
	p.start(tb, exec.Command(bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-g", "daemon off;"))
	return p
}

// URL is the proxy's base URL.
func (p *Proxy) URL() string { return "http://" + p.Addr }

// Log is what the server wrote to its log so far.
func (p *Proxy) Log() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

func writeConf(tb testing.TB, path, s string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// start runs cmd until cleanup and waits until addr accepts connections.
func (p *Proxy) start(tb testing.TB, cmd *exec.Cmd) {
	tb.Helper()
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		tb.Fatalf("start %s: %v", cmd.Path, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	tb.Cleanup(func() {
		// SIGTERM: nginx's fast shutdown, Caddy's graceful one.
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if c, err := (&net.Dialer{}).DialContext(ctx, "tcp", p.Addr); err == nil {
			c.Close()
			return
		}
		select {
		case <-done:
			tb.Fatalf("%s exited at start:\n%s", filepath.Base(cmd.Path), p.Log())
		case <-ctx.Done():
			tb.Fatalf("%s not listening on %s after 30s:\n%s", filepath.Base(cmd.Path), p.Addr, p.Log())
		case <-tick.C:
		}
	}
}
