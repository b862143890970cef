package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// MinIO is a real MinIO server on loopback, started by the test binary.
type MinIO struct {
	Endpoint  string // host:port
	AccessKey string
	SecretKey string

	bin     string
	dir     string
	console string
	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
}

var minioShared struct {
	once sync.Once
	srv  *MinIO
	err  error
}

// MinIOBinary finds the pinned MinIO server: $WHARF_MINIO, ./bin/minio
// at the module root, $(go env GOPATH)/bin/minio, or PATH.
func MinIOBinary() (string, error) {
	var candidates []string
	if p := os.Getenv("WHARF_MINIO"); p != "" {
		candidates = append(candidates, p)
	}
	if root, err := moduleRoot(); err == nil {
		candidates = append(candidates, filepath.Join(root, "bin", "minio"))
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, gp := range filepath.SplitList(strings.TrimSpace(string(out))) {
			candidates = append(candidates, filepath.Join(gp, "bin", "minio"))
		}
	}
	for _, c := range candidates {
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c, nil
		}
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("minio server: %w (make minio builds the pinned one)", errNotFound)
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errNotFound
		}
		dir = parent
	}
}

// SharedMinIO returns the MinIO server shared by the tests of this binary,
// starting it on first use; Main stops it. Tests that kill the server use
// NewMinIO for one of their own.
func SharedMinIO(tb testing.TB) *MinIO {
	tb.Helper()
	minioShared.once.Do(func() {
		minioShared.srv, minioShared.err = startMinIO(tb)
		if minioShared.err == nil {
			atExit(minioShared.srv.close)
		}
	})
	Need(tb, "MinIO", minioShared.err)
	return minioShared.srv
}

// NewMinIO starts a MinIO server of the test's own, stopped at cleanup.
func NewMinIO(tb testing.TB) *MinIO {
	tb.Helper()
	srv, err := startMinIO(tb)
	Need(tb, "MinIO", err)
	tb.Cleanup(srv.close)
	return srv
}

func startMinIO(tb testing.TB) (*MinIO, error) {
	bin, err := MinIOBinary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "wharf-minio-")
	if err != nil {
		return nil, err
	}
	m := &MinIO{
		Endpoint:  FreeAddr(tb),
		console:   FreeAddr(tb),
		AccessKey: "wharftest",
		SecretKey: "wharftest-secret",
		bin:       bin,
		dir:       dir,
	}
	if err := m.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return m, nil
}

// Start starts the server (again, after Kill) on the same address and data.
func (m *MinIO) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cmd := exec.Command(m.bin, "server", filepath.Join(m.dir, "data"),
		"--address", m.Endpoint, "--console-address", m.console, "--quiet")
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+m.AccessKey,
		"MINIO_ROOT_PASSWORD="+m.SecretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
	)
	logf, err := os.OpenFile(filepath.Join(m.dir, "minio.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start minio: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	m.cmd, m.done = cmd, done
	return m.waitReady(done)
}

// waitReady polls the liveness endpoint until the server answers, it exits,
// or 60 s pass. Polling is a readiness wait, not synchronisation between
// parts of the test.
func (m *MinIO) waitReady(exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	url := "http://" + m.Endpoint + "/minio/health/ready"
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(m.dir, "minio.log"))
			return fmt.Errorf("minio exited at start: %s", log)
		case <-ctx.Done():
			return fmt.Errorf("minio not ready at %s after 60s", m.Endpoint)
		case <-tick.C:
		}
	}
}

// Kill stops the server at once (SIGKILL), as a crash would.
func (m *MinIO) Kill() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil && m.cmd.Process != nil {
		m.cmd.Process.Kill()
		<-m.done
		m.cmd = nil
	}
}

func (m *MinIO) close() {
	m.Kill()
	os.RemoveAll(m.dir)
}

// URL is the server's base URL.
func (m *MinIO) URL() string { return "http://" + m.Endpoint }

// Credentials returns the root user's access and secret key.
func (m *MinIO) Credentials() (access, secret string) { return m.AccessKey, m.SecretKey }
