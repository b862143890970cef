package buildinfo_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
)

// TestMakeBuildRecords: a binary linked with make build's -ldflags prints
// the checkout's commit and its time in --version, even under
// -buildvcs=false, where Go records nothing ("(devel) (commit unknown)"
// before).
func TestMakeBuildRecords(t *testing.T) {
	for _, tool := range []string{"git", "make"} {
		testenv.Tool(t, tool)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
		testenv.Need(t, "a git checkout", err)
		return strings.TrimSpace(string(out))
	}
	commit, when := git("rev-parse", "HEAD"), git("show", "-s", "--format=%cI", "HEAD")
	ldflags, err := exec.Command("make", "-s", "-C", root, "ldflags").Output()
	if err != nil {
		t.Fatalf("make ldflags: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "version")
	build := exec.Command("go", "build", "-buildvcs=false", "-ldflags", strings.TrimSpace(string(ldflags)), "-o", bin, "./testdata/version")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	if !strings.Contains(got, "(commit "+commit[:12]) || !strings.Contains(got, when) {
		t.Errorf("--version of make build's binary: %q, want commit %s and time %s", got, commit[:12], when)
	}
}
