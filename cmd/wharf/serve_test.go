package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/internal/testenv"
)

// lastLine is what `| tail -n 1` gives.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// notifyWriter is a concurrency-safe buffer that closes ready when a
// line containing mark is written.
type notifyWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	mark  string
	ready chan struct{}
	once  sync.Once
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.mark != "" && strings.Contains(w.buf.String(), w.mark) {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

func (w *notifyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// startServe runs `wharf serve ARGS...` in-process until the test ends,
// once it says it is serving.
func startServe(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout := &notifyWriter{mark: "serving", ready: make(chan struct{})}
	var stderr notifyWriter
	done := make(chan error, 1)
	go func() {
		done <- newApp(stdout, &stderr).RunContext(ctx, append([]string{"wharf", "serve"}, args...))
	}()
	select {
	case <-stdout.ready:
	case err := <-done:
		cancel()
		t.Fatalf("serve: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
}

// TestServeWalkthrough is docs/serve.md as a test: publish the demo
// release, create an organisation, a key, a user and a token, serve, and
// download with curl and the install script.
func TestServeWalkthrough(t *testing.T) {
	curl := testenv.Tool(t, "curl")
	dash := testenv.Tool(t, "dash")
	testenv.Tool(t, "openssl")
	dir := t.TempDir()
	addr := testenv.FreeAddr(t)
	url := "http://" + addr
	store := filepath.Join(dir, "public")
	db := filepath.Join(dir, "wharf.db")
	run := func(args ...string) string { t.Helper(); return mustRun(t, args...) }
	run("keygen", "--out", filepath.Join(dir, "dl.key"))
	run("publish", "--version", "26.1.1", "--key", filepath.Join(dir, "dl.key"), "--store", store, "--base-url", url, demoInputDir(t, "demo"))

	run("org", "create", "acme", "--level", "basic", "--db", db)
	run("org", "create", "--db", db, "globex", "--level=full")
	if out := run("org", "list", "--db", db); !strings.Contains(out, "acme") || !strings.Contains(out, "globex  full") {
		t.Errorf("org list:\n%s", out)
	}
	key := lastLine(run("apikey", "create", "--org", "acme", "--db", db))
	if !strings.HasPrefix(key, "wk_") {
		t.Fatalf("apikey create: last line %q is not a key", key)
	}
	run("user", "add", "alice", "--org", "globex", "--db", db)
	t.Setenv("WHARF_DB", db) // the environment works as well as --db
	token := lastLine(run("token", "create", "--user", "alice"))
	if strings.Count(token, ".") != 2 {
		t.Fatalf("token create: last line %q is not a JWT", token)
	}

	startServe(t, "--store", store, "--listen", addr, "--refresh", "0")

	code := func(args ...string) string {
		t.Helper()
		out, _ := exec.Command(curl, append([]string{"-s", "-o", os.DevNull, "-w", "%{http_code}"}, args...)...).Output()
		return string(out)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"PublicCLI", []string{"-L", url + "/x86/treasury-cli"}, "200"},
		{"Latest", []string{url + "/latest"}, "200"},
		{"EngineNeedsAuth", []string{"-L", url + "/x86/engine"}, "401"},
		{"EngineWithKey", []string{"-L", "-u", key + ":", url + "/x86/engine"}, "200"},
		{"ImageBasicKey", []string{"-L", "-u", key + ":", url + "/x86/treasury-node"}, "403"},
		{"ImageToken", []string{"-L", "-H", "Authorization: Bearer " + token, url + "/x86/treasury-node"}, "200"},
		{"Sig", []string{"-L", url + "/arm/treasury-demo/sig"}, "200"},
	}
	for _, tt := range tests {
		if got := code(tt.args...); got != tt.want {
			t.Errorf("%s: curl %s = %s, want %s", tt.name, strings.Join(tt.args, " "), got, tt.want)
		}
	}
	if out := run("apikey", "list"); strings.Contains(out, "never") {
		t.Errorf("apikey list shows no last use after a download:\n%s", out)
	}

	home := t.TempDir()
	cmd := exec.Command(dash, "-c", `curl -fsSL "$URL/install" | sh`)
	cmd.Env = []string{"URL=" + url, "HOME=" + home, "PATH=" + filepath.Join(home, ".local/bin") + ":/usr/bin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	if out, err := exec.Command(filepath.Join(home, ".local/bin/treasury")).Output(); err != nil || !strings.Contains(string(out), "treasury") {
		t.Errorf("installed treasury: %v %s", err, out)
	}

	// Revoking the key and removing the user take effect at once.
	id := strings.Fields(lastLine(run("apikey", "list")))[0]
	run("apikey", "revoke", id)
	run("user", "remove", "alice")
	if got := code("-L", "-u", key+":", url+"/x86/engine"); got != "401" {
		t.Errorf("revoked key: %s, want 401", got)
	}
	if got := code("-L", "-H", "Authorization: Bearer "+token, url+"/x86/engine"); got != "401" {
		t.Errorf("removed user's token: %s, want 401", got)
	}
}

func TestAdminErrors(t *testing.T) {
	db := filepath.Join(t.TempDir(), "wharf.db")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"org", "create", "acme", "--level", "admin"}, "neither"},
		{[]string{"org", "create"}, "want one NAME"},
		{[]string{"org", "set-level", "nope", "full"}, "not found"},
		{[]string{"apikey", "create", "--org", "nope"}, "not found"},
		{[]string{"apikey", "revoke", "123"}, "not found"},
		{[]string{"token", "create", "--user", "nobody"}, "no user nobody in " + db + "; add one with: wharf user add nobody --org ORG"},
		{[]string{"user", "add", "bob", "--org", "nope"}, "not found"},
		{[]string{"serve", "--store", "ftp://x"}, "want a directory"},
		{[]string{"serve", "--base-url", "https://ci:secret@dl.example.com"}, "user:password@"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, err := pubRun(t, append(tt.args, "--db", db)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestServeHelpHasExample(t *testing.T) {
	for _, cmd := range [][]string{{"serve"}, {"org", "create"}, {"org", "set-level"}, {"user", "add"}, {"user", "remove"}, {"apikey", "create"}, {"apikey", "revoke"}, {"apikey", "list"}, {"token", "create"}} {
		out, _, err := pubRun(t, append(cmd, "--help")...)
		if err != nil || !strings.Contains(out, "Example") || !strings.Contains(out, "wharf "+cmd[0]) {
			t.Errorf("wharf %s --help = %v:\n%s", strings.Join(cmd, " "), err, out)
		}
	}
}

// TestAdminNeverCreatesDatabase: with no --db and no ./wharf.db an admin
// command fails naming the path it looked at and creates nothing; an
// explicit --db of a new file is created (0600) with a line saying so.
func TestAdminNeverCreatesDatabase(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("WHARF_DB", "")
	os.Unsetenv("WHARF_DB")
	for _, args := range [][]string{
		{"org", "list"},
		{"org", "create", "acme", "--level", "basic"},
		{"apikey", "list"},
		{"token", "create", "--user", "alice"},
		{"user", "add", "alice", "--org", "acme"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, _, err := pubRun(t, args...)
			want := "no database at " + filepath.Join(dir, "wharf.db")
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("err = %v, want %q", err, want)
			}
			if _, err := os.Stat(filepath.Join(dir, "wharf.db")); err == nil {
				t.Fatal("created ./wharf.db")
			}
		})
	}
	t.Run("UnknownScheme", func(t *testing.T) {
		_, _, err := pubRun(t, "org", "list", "--db", "mysql://root@127.0.0.1/wharf")
		if err == nil || !strings.Contains(err.Error(), `no database of kind "mysql"`) || !strings.Contains(err.Error(), "postgres://") {
			t.Errorf("err = %v, want one naming the kinds --db takes", err)
		}
		if _, err := os.Stat("mysql:"); err == nil {
			t.Error("created a file for the URL")
		}
	})
	t.Run("ExplicitNewFile", func(t *testing.T) {
		db := filepath.Join(dir, "new.db")
		_, stderr, err := pubRun(t, "org", "create", "acme", "--level", "basic", "--db", db)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stderr, "created a new database "+db) {
			t.Errorf("stderr = %q, want a line saying it created %s", stderr, db)
		}
		if st, err := os.Stat(db); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", db, err, st.Mode().Perm())
		}
		// Existing now: no second line.
		if _, stderr, _ := pubRun(t, "org", "list", "--db", db); strings.Contains(stderr, "created") {
			t.Errorf("second run: %q", stderr)
		}
	})
	t.Run("DefaultExisting", func(t *testing.T) {
		mustRun(t, "org", "create", "globex", "--level", "full", "--db", filepath.Join(dir, "wharf.db"))
		if out := mustRun(t, "org", "list"); !strings.Contains(out, "globex") {
			t.Errorf("org list with ./wharf.db: %q", out)
		}
	})
}

// TestServeStoreUnavailable: a missing store directory or an unreachable
// S3 endpoint does not stop wharf serve: it starts, answers /healthz with
// 503 and creates nothing.
func TestServeStoreUnavailable(t *testing.T) {
	for _, tt := range []struct {
		name  string
		store []string
	}{
		{"TypoDirectory", []string{"--store", filepath.Join(t.TempDir(), "typo")}},
		{"S3Unreachable", []string{"--store", "s3://releases", "--s3-endpoint", "http://" + testenv.FreeAddr(t)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := testenv.FreeAddr(t)
			startServe(t, append(tt.store, "--listen", addr, "--db", filepath.Join(t.TempDir(), "wharf.db"))...)
			resp, err := http.Get("http://" + addr + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("/healthz = %d, want 503", resp.StatusCode)
			}
			if tt.name == "TypoDirectory" {
				if _, err := os.Stat(tt.store[1]); err == nil {
					t.Error("serve created the store directory")
				}
			}
		})
	}
}

// TestServeMetricsListenAndProxies: --metrics-listen moves /metrics off
// the public listener (with wharf_build_info); --trusted-proxy makes the
// logs name the client behind the proxy; the flags shared with addrd
// exist under the same names.
func TestServeMetricsListenAndProxies(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "public")
	run := func(args ...string) string { t.Helper(); return mustRun(t, args...) }
	run("keygen", "--out", filepath.Join(dir, "dl.key"))
	run("publish", "--version", "26.1.1", "--key", filepath.Join(dir, "dl.key"), "--store", store, "--base-url", "http://127.0.0.1", demoInputDir(t, "demo"))
	addr, maddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	startServe(t, "--store", store, "--listen", addr, "--metrics-listen", maddr, "--db", filepath.Join(dir, "wharf.db"),
		"--trusted-proxy", "127.0.0.0/8", "--log-level", "debug", "--log-format", "json", "--shutdown-timeout", "5s")
	status := func(url string, hdr ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := status("http://" + addr + "/metrics"); code != 404 {
		t.Errorf("/metrics on the public listener = %d, want 404", code)
	}
	if code, body := status("http://" + maddr + "/metrics"); code != 200 || !strings.Contains(body, "wharf_build_info{") {
		t.Errorf("/metrics on --metrics-listen = %d, lacks wharf_build_info: %.300s", code, body)
	}
	if code, _ := status("http://"+addr+"/latest", "X-Forwarded-For", "203.0.113.9"); code != 200 {
		t.Errorf("/latest = %d", code)
	}
	for _, bad := range [][]string{
		{"serve", "--trusted-proxy", "not-a-cidr"},
		{"serve", "--log-level", "loud"},
	} {
		_, _, err := pubRun(t, bad...)
		if err == nil || shell.ExitCode(err) != 2 {
			t.Errorf("wharf %s = %v (exit %d), want a usage error", strings.Join(bad, " "), err, shell.ExitCode(err))
		}
	}
}
