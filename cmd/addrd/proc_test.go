package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/api"
)

// asMain, set in the environment, makes the test binary run addrd's main
// instead of the tests: the process tests start replicas that way.
const asMain = "ADDRD_TEST_AS_MAIN"

// proc is an `addrd serve` in a process of its own.
type proc struct {
	cmd    *exec.Cmd
	base   string // http://host:port
	holder string // its name in the leases: host:pid
	stdout *testenv.Buffer
	stderr *testenv.Buffer
	done   chan struct{}
}

// startProc starts `addrd serve --listen 127.0.0.1:0 args...` as a process
// and waits up to 60 s for its listening line. It is stopped (continued
// first, if stopped) and killed at cleanup.
func startProc(t testing.TB, args ...string) *proc {
	t.Helper()
	p := &proc{stdout: &testenv.Buffer{}, stderr: &testenv.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	p.cmd.Env = append(os.Environ(), asMain+"=1")
	p.cmd.Stderr = p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	p.holder = host + ":" + strconv.Itoa(p.cmd.Process.Pid)
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			p.stdout.Write([]byte(line + "\n"))
			if base, ok := strings.CutPrefix(line, "addrd listening on "); ok {
				listening <- base
			}
		}
		io.Copy(io.Discard, out)
	}()
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGCONT)
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", p.holder, p.stderr)
		}
	})
	select {
	case p.base = <-listening:
	case <-p.done:
		t.Fatalf("addrd serve exited: %s", p.stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("addrd serve printed no listening line in 60 s: %s", p.stderr)
	}
	return p
}

// signal sends sig to the process.
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// do sends a request with the API key id:secret (none when key is "").
func (p *proc) do(t *testing.T, key, method, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, p.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id, secret, ok := strings.Cut(key, ":"); ok {
		req.SetBasicAuth(id, secret)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// healthz is the body of GET /healthz.
type healthz struct {
	Status string                     `json:"status"`
	Chains map[string]api.ChainHealth `json:"chains"`
	Fetch  map[string]string          `json:"fetch"`
}

func (p *proc) health(t *testing.T) healthz {
	t.Helper()
	status, body := p.do(t, "", "GET", "/healthz")
	var h healthz
	if err := json.Unmarshal(body, &h); err != nil || status != 200 {
		t.Fatalf("/healthz: %d %s (%v)", status, body, err)
	}
	return h
}

// eventually polls cond every 50 ms until it holds or within fails.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

func (p *proc) String() string { return fmt.Sprintf("replica %s", p.holder) }
