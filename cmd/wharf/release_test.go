package main

import (
	"bufio"
	"bytes"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/s3/s3test"
)

// workflow is the part of a GitHub Actions workflow the release test runs.
type workflow struct {
	Jobs map[string]struct {
		Steps []workflowStep `yaml:"steps"`
	} `yaml:"jobs"`
}

type workflowStep struct {
	Name string            `yaml:"name"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	Env  map[string]string `yaml:"env"`
}

// expression is a ${{ secrets.X }} or ${{ vars.X }} in a step's env.
var expression = regexp.MustCompile(`^\$\{\{\s*(secrets|vars)\.([A-Z0-9_]+)\s*\}\}$`)

// TestReleaseWorkflow runs the publish job of .github/workflows/release.yml
// as a runner would: each step's script under bash -eo pipefail, its env
// filled from the repository's secrets and variables (here: a real MinIO,
// a fresh key, wharf serve on loopback as the public URL), $GITHUB_ENV
// carried from step to step. The steps that only set up the runner (the
// actions, and `go build` of wharf, done here beforehand) are left out;
// a step the test does not know fails it, so the workflow cannot change
// unnoticed.
func TestReleaseWorkflow(t *testing.T) {
	bash := testenv.Tool(t, "bash")
	testenv.Tool(t, "curl")
	testenv.Tool(t, "cmp")
	m := testenv.SharedMinIO(t)
	bucket, _ := s3test.Bucket(t, m)
	for k, v := range s3test.Env(m) {
		t.Setenv(k, v)
	}

	b, err := os.ReadFile("../../.github/workflows/release.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf("release.yml: %v", err)
	}
	job, ok := wf.Jobs["publish"]
	if !ok {
		t.Fatal("release.yml has no publish job")
	}

	// The runner: a workspace with bin/wharf and the downloaded dist/.
	work := t.TempDir()
	runnerTemp := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(work, "bin", "wharf"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.Rename(demoInputDir(t, "release"), filepath.Join(work, "dist")); err != nil {
		t.Fatal(err)
	}
	// One executable as the build job makes them, a Go program (wharf
	// itself), whose SBOM publish writes from its build info; the demo's
	// others are scripts, which have none.
	wharfBin, err := os.ReadFile(filepath.Join(work, "bin", "wharf"))
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(work, "dist", "treasury-cli-linux-amd64"), wharfBin)
	if err := os.Chmod(filepath.Join(work, "dist", "treasury-cli-linux-amd64"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The commit's release notes for the version (the tag is none here:
	// the workspace is no git checkout).
	if err := os.MkdirAll(filepath.Join(work, "release-notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(work, "release-notes", "26.4.1.md"), []byte("## Fixed\n\n- **engine** no longer drops the last block.\n"))
	keyDir := t.TempDir()
	if _, _, err := pubRun(t, "keygen", "--out", filepath.Join(keyDir, "dl.key")); err != nil {
		t.Fatal(err)
	}
	readKey := func(name string) string {
		b, err := os.ReadFile(filepath.Join(keyDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimRight(string(b), "\n") // as pasted into a secret
	}
	baseURL := "http://" + testenv.FreeAddr(t)
	settings := map[string]string{
		"secrets.AWS_ACCESS_KEY_ID":     os.Getenv("AWS_ACCESS_KEY_ID"),
		"secrets.AWS_SECRET_ACCESS_KEY": os.Getenv("AWS_SECRET_ACCESS_KEY"),
		"secrets.WHARF_SIGNING_KEY":     readKey("dl.key"),
		"vars.WHARF_KMS_KEY":            "",
		"vars.WHARF_BUCKET":             bucket + "/dl",
		"vars.WHARF_BASE_URL":           baseURL,
		"vars.WHARF_PUBLIC_KEY":         readKey("dl.pub"),
		"vars.AWS_REGION":               os.Getenv("AWS_REGION"),
		"vars.WHARF_S3_ENDPOINT":        m.URL(),
	}
	const version = "26.4.1"
	githubEnv := filepath.Join(runnerTemp, "github_env")
	runnerEnv := map[string]string{
		"GITHUB_ACTIONS":      "true",
		"GITHUB_SERVER_URL":   "https://github.com",
		"GITHUB_REPOSITORY":   "wharfhq/treasury",
		"GITHUB_SHA":          "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
		"GITHUB_REF":          "refs/tags/v" + version,
		"GITHUB_EVENT_NAME":   "push",
		"GITHUB_RUN_ID":       "7340012",
		"GITHUB_RUN_ATTEMPT":  "1",
		"GITHUB_WORKFLOW_REF": "wharfhq/treasury/.github/workflows/release.yml@refs/tags/v" + version,
	}
	carried := map[string]string{}

	run := func(st workflowStep) string {
		t.Helper()
		env := map[string]string{
			"PATH":        os.Getenv("PATH"),
			"HOME":        t.TempDir(),
			"VERSION":     version, // the workflow's env: the tag
			"RUNNER_TEMP": runnerTemp,
			"GITHUB_ENV":  githubEnv,
		}
		// What every GitHub Actions job has in its environment, which the
		// provenance is written from.
		maps.Copy(env, runnerEnv)
		maps.Copy(env, carried)
		for k, v := range st.Env {
			sub := expression.FindStringSubmatch(v)
			if sub == nil {
				t.Fatalf("step %q: env %s = %q: the test knows only ${{ secrets.X }} and ${{ vars.X }}", st.Name, k, v)
			}
			val, ok := settings[sub[1]+"."+sub[2]]
			if !ok {
				t.Fatalf("step %q: env %s: the test has no %s.%s", st.Name, k, sub[1], sub[2])
			}
			env[k] = val
		}
		if err := os.WriteFile(githubEnv, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bash, "--noprofile", "--norc", "-eo", "pipefail", "-c", st.Run)
		cmd.Dir = work
		for _, k := range slices.Sorted(maps.Keys(env)) {
			cmd.Env = append(cmd.Env, k+"="+env[k])
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("step %q: %v\n%s", st.Name, err, out)
		}
		f, err := os.Open(githubEnv)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for sc := bufio.NewScanner(f); sc.Scan(); {
			if k, v, ok := strings.Cut(sc.Text(), "="); ok {
				carried[k] = v
			}
		}
		return string(out)
	}

	// wharf serve over the bucket is the release's public URL; it starts
	// before the check step.
	serve := func() {
		startServe(t, "--store", bucket+"/dl", "--s3-endpoint", m.URL(), "--listen", strings.TrimPrefix(baseURL, "http://"),
			"--db", filepath.Join(t.TempDir(), "wharf.db"))
	}

	var ran []string
	for _, st := range job.Steps {
		switch {
		case st.Uses != "", st.Name == "build wharf":
			continue
		case st.Name == "signing key", st.Name == "remove the key":
			run(st)
		case st.Name == "release notes":
			if out := run(st); !strings.Contains(out, "release notes: release-notes/"+version+".md") {
				t.Errorf("release notes step printed:\n%s", out)
			}
		case st.Name == "publish":
			out := run(st)
			if !strings.Contains(out, "published "+version) {
				t.Errorf("publish step printed:\n%s", out)
			}
			// "A re-run of this job after a failure finishes the release".
			if out := run(st); !strings.Contains(out, "nothing to do") {
				t.Errorf("publish step run again printed:\n%s", out)
			}
		case st.Name == "check what was published":
			serve()
			if out := run(st); !strings.Contains(out, "signature OK") {
				t.Errorf("check step printed:\n%s", out)
			}
			// The notes reached the release (they were dropped before).
			resp, err := http.Get(baseURL + "/releases.json")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), "no longer drops the last block") {
				t.Errorf("releases.json has no release notes:\n%s", body)
			}
			checkAttested(t, body, version, runnerEnv, "treasury-cli-"+version+"-linux-amd64.tar.gz")
		default:
			t.Fatalf("release.yml's publish job has a step %q the test does not know", st.Name)
		}
		ran = append(ran, st.Name)
	}
	want := []string{"signing key", "release notes", "publish", "check what was published", "remove the key"}
	if !slices.Equal(ran, want) {
		t.Errorf("ran steps %q, want %q", ran, want)
	}
	if _, err := os.Stat(filepath.Join(runnerTemp, "dl.key")); !os.IsNotExist(err) {
		t.Errorf("the signing key is still in RUNNER_TEMP after the job: %v", err)
	}
}

// checkAttested holds the release version of releases.json (body) to what
// the job's environment says: every artifact has a provenance
// attestation, the Go executable's (the file goBuilt) also its SBOM, and
// the release's provenance names the job's repository, commit and ref.
func checkAttested(t *testing.T, body []byte, version string, runner map[string]string, goBuilt string) {
	t.Helper()
	m, err := publish.ReadManifest(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	rel, ok := m.Find(version)
	if !ok {
		t.Fatalf("releases.json has no %s", version)
	}
	p := rel.Provenance
	if p == nil || p.Commit != runner["GITHUB_SHA"] || p.Ref != runner["GITHUB_REF"] || !strings.HasSuffix(p.Repository, runner["GITHUB_REPOSITORY"]) {
		t.Errorf("the release's provenance = %+v, want the job's repository, commit and ref", p)
	}
	if len(rel.Artifacts) == 0 {
		t.Fatal("the release lists no artifacts")
	}
	seen := false
	for _, a := range rel.Artifacts {
		types := map[string]bool{}
		for _, at := range a.Attestations {
			types[at.PredicateType] = true
		}
		if !types[publish.PredicateSLSA] {
			t.Errorf("%s has no provenance attestation: %+v", a.Key, a.Attestations)
		}
		if a.FileName() == goBuilt {
			seen = true
			if !types[publish.PredicateCycloneDX] {
				t.Errorf("%s has no SBOM attestation: %+v", a.Key, a.Attestations)
			}
		}
	}
	if !seen {
		t.Errorf("the release lists no %s", goBuilt)
	}
}
