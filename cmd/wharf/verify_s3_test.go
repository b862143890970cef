package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish/s3/s3test"
)

// TestVerifyS3Tree: wharf verify checks a tree in a bucket (MinIO) as it
// checks one in a directory, with the same output but for the names, the
// record's times and the directory's line about links, and refuses a
// bucket tree without a manifest.
func TestVerifyS3Tree(t *testing.T) {
	m := testenv.SharedMinIO(t)
	bucketURL, _ := s3test.Bucket(t, m)
	for k, v := range s3test.Env(m) {
		t.Setenv(k, v)
	}
	tmp := t.TempDir()
	key, pub := filepath.Join(tmp, "dl.key"), filepath.Join(tmp, "dl.pub")
	mustRun(t, "keygen", "--out", key)
	inputs := demoInputDir(t, "verify")
	store, local := bucketURL+"/dl", filepath.Join(tmp, "public")
	for _, st := range []string{store, local} {
		args := []string{"publish", "--version", "26.1.1", "--key", key, "--store", st, "--base-url", "https://dl.example.com"}
		if st == store {
			args = append(args, "--s3-endpoint", m.URL())
		}
		mustRun(t, append(args, inputs)...)
	}
	fromS3 := mustRun(t, "verify", "--key", pub, "--s3-endpoint", m.URL(), store)
	fromDir := mustRun(t, "verify", "--key", pub, local)
	times := regexp.MustCompile(`issued \S+, (expires \S+|no expiry)`)
	norm := func(out, prefix string) string {
		return times.ReplaceAllString(strings.ReplaceAll(out, prefix, "TREE"), "issued T, expires T")
	}
	// A directory's check also says it holds no link; a bucket has none.
	fromDir = strings.Replace(fromDir, local+": no symbolic link\n", "", 1)
	if got, want := norm(fromS3, store), norm(fromDir, local); got != want || !strings.Contains(got, "TREE/releases.json: signature OK (1 releases)") {
		t.Errorf("verify %s printed\n%s\nwant what verify of a directory printed:\n%s", store, got, want)
	}
	_, _, err := pubRun(t, "verify", "--key", pub, "--s3-endpoint", m.URL(), bucketURL+"/nothing")
	if err == nil || shell.ExitCode(err) != 2 || !strings.Contains(err.Error(), "not a published tree: "+bucketURL+"/nothing/releases.json") {
		t.Errorf("verify of an empty prefix: %v (exit %d), want not a published tree, exit 2", err, shell.ExitCode(err))
	}
}
