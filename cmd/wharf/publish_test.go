package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish/s3/s3test"
)

// demoInputDir runs scripts/demo-inputs.sh, as make run does.
func demoInputDir(t *testing.T, label string) string {
	t.Helper()
	bash := testenv.Tool(t, "bash")
	testenv.Tool(t, "tar")
	dir := filepath.Join(t.TempDir(), "input")
	out, err := exec.Command(bash, "../../scripts/demo-inputs.sh", dir, label).CombinedOutput()
	if err != nil {
		t.Fatalf("demo-inputs.sh: %v\n%s", err, out)
	}
	return dir
}

func TestPublishCommand(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "dl.key")
	if _, _, err := pubRun(t, "keygen", "--out", key); err != nil {
		t.Fatal(err)
	}
	input := demoInputDir(t, "cmd")
	store := filepath.Join(dir, "public")
	args := []string{"publish", "--version", "26.1.1", "--key", key, "--store", store, "--base-url", "http://127.0.0.1:8080"}

	t.Run("DryRun", func(t *testing.T) {
		out, _, err := pubRun(t, append(append([]string{}, args...), "--dry-run", input)...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "bin/26.1.1/treasury-cli-26.1.1-macos-arm64.tar.gz.sig\n") || !strings.Contains(out, "nothing was written") {
			t.Errorf("dry run printed:\n%s", out)
		}
		if _, err := os.Stat(store); !os.IsNotExist(err) {
			t.Errorf("dry run created the store directory (%v)", err)
		}
	})
	t.Run("Publish", func(t *testing.T) {
		out, logs, err := pubRun(t, append(append([]string{}, args...), input)...)
		if err != nil {
			t.Fatalf("%v\n%s", err, logs)
		}
		if !strings.Contains(out, "published 26.1.1") || !strings.Contains(logs, "uploaded bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz") {
			t.Errorf("stdout:\n%s\nstderr:\n%s", out, logs)
		}
		file := filepath.Join(store, "bin/26.1.1/treasury-cli-26.1.1-linux-amd64.tar.gz")
		if out, _, err := pubRun(t, "verify", "--key", filepath.Join(store, "dl.pub"), file); err != nil {
			t.Errorf("verify a published archive: %v (%s)", err, out)
		}
	})
	t.Run("Again", func(t *testing.T) {
		out, logs, err := pubRun(t, append(append([]string{}, args...), input)...)
		if err != nil || !strings.Contains(out, "nothing to do: every object of 26.1.1 is in place") {
			t.Errorf("identical re-publish = %q, %v", out, err)
		}
		// Said once: the progress line, not again in the outcome.
		if n := strings.Count(out+logs, "already published"); n != 1 {
			t.Errorf("identical re-publish says %d times that 26.1.1 is published:\n%s%s", n, logs, out)
		}
	})
	t.Run("EnvVars", func(t *testing.T) {
		t.Setenv("WHARF_VERSION", "26.1.2")
		t.Setenv("WHARF_KEY", key)
		t.Setenv("WHARF_STORE", store)
		t.Setenv("WHARF_BASE_URL", "http://127.0.0.1:8080")
		out, logs, err := pubRun(t, "publish", input)
		if err != nil || !strings.Contains(out, "latest 26.1.2") {
			t.Errorf("publish from the environment = %q, %v\n%s", out, err, logs)
		}
	})
	t.Run("Refused", func(t *testing.T) {
		// Refused before anything is printed or a store directory made:
		// fresh is never created.
		fresh := filepath.Join(t.TempDir(), "fresh")
		tests := []struct {
			name string
			args []string
			want string
		}{
			{"NoInput", args, "want one INPUT_DIR"},
			{"BadVersion", []string{"publish", "--version", "26.1", "--key", key, "--store", fresh, "--base-url", "http://x", input}, "malformed version"},
			{"SameVersionOtherBytes", append(append([]string{}, args...), demoInputDir(t, "other")), "different content"},
			{"BadKey", []string{"publish", "--version", "26.1.3", "--key", filepath.Join(store, "dl.pub"), "--store", fresh, "--base-url", "http://x", input}, "a public key"},
			{"BadBaseURL", []string{"publish", "--version", "26.1.3", "--key", key, "--store", fresh, "--base-url", "dl.example.com", input}, "base URL"},
			{"BadConfig", []string{"publish", "--version", "26.1.3", "--key", key, "--store", fresh, "--base-url", "http://x", "--config", filepath.Join(dir, "none.toml"), input}, "none.toml"},
			{"BadInput", []string{"publish", "--version", "26.1.3", "--key", key, "--store", fresh, "--base-url", "http://x", dir}, "unknown file"},
			{"BadParallel", []string{"publish", "--version", "26.1.3", "--key", key, "--store", fresh, "--base-url", "http://x", "--parallel", "0", input}, "--parallel 0"},
			{"BadStore", []string{"publish", "--version", "26.1.3", "--key", key, "--store", "ftp://x/y", "--base-url", "http://x", input}, "want a directory or s3://"},
			{"MissingFlag", []string{"publish", "--key", key, input}, "publish: --version is required; usage: wharf publish [command options] INPUT_DIR"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, logs, err := pubRun(t, tt.args...)
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("publish = %v, want an error mentioning %q", err, tt.want)
				}
				if tt.name != "SameVersionOtherBytes" && strings.Contains(logs, "publishing") {
					t.Errorf("refused after it said it was publishing:\n%s", logs)
				}
				if _, err := os.Stat(fresh); !os.IsNotExist(err) {
					t.Errorf("a refused publish created the store directory (%v)", err)
				}
			})
		}
	})
}

func TestHelpHasExample(t *testing.T) {
	for _, cmd := range []string{"keygen", "init", "check", "publish", "verify"} {
		out, _, err := pubRun(t, cmd, "--help")
		if err != nil || !strings.Contains(out, "Example") || !strings.Contains(out, "wharf "+cmd) {
			t.Errorf("wharf %s --help = %v:\n%s", cmd, err, out)
		}
	}
}

// TestPublishCommandS3 publishes to a bucket of a real MinIO through the
// s3:// store, with the endpoint flag and AWS_* credentials, as a CI job.
func TestPublishCommandS3(t *testing.T) {
	m := testenv.SharedMinIO(t)
	bucket, _ := s3test.Bucket(t, m)
	for k, v := range s3test.Env(m) {
		t.Setenv(k, v)
	}
	key := filepath.Join(t.TempDir(), "dl.key")
	if _, _, err := pubRun(t, "keygen", "--out", key); err != nil {
		t.Fatal(err)
	}
	input := demoInputDir(t, "s3")
	out, logs, err := pubRun(t, "publish", "--version", "26.1.1", "--key", key, "--store", bucket+"/dl",
		"--s3-endpoint", m.URL(), "--base-url", "https://dl.example.com", input)
	if err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	if !strings.Contains(out, "published 26.1.1") {
		t.Errorf("stdout: %s", out)
	}
	out, _, err = pubRun(t, "publish", "--version", "26.1.1", "--key", key, "--store", bucket+"/dl",
		"--s3-endpoint", m.URL(), "--base-url", "https://dl.example.com", input)
	if err != nil || !strings.Contains(out, "nothing to do") {
		t.Errorf("identical re-publish to S3 = %q, %v", out, err)
	}
}
