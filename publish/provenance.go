package publish

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Build types of the provenance wharf writes: GitHub Actions' own for a
// workflow run, and wharf's for a build described by flags (the source
// and the builder, nothing else).
const (
	BuildTypeGitHub = "https://actions.github.io/buildtypes/workflow/v1"
	BuildTypeWharf  = "https://github.com/wharfhq/wharf/blob/main/docs/publish.md#provenance"
)

// MaxProvenanceField bounds each field of a Provenance.
const MaxProvenanceField = 1024

// Provenance is what a release's build job tells about itself: where the
// source came from and who built it. A field that is not known is empty
// and stays absent from the statement: nothing is guessed.
type Provenance struct {
	BuilderID    string // the builder's identity (runDetails.builder.id)
	Repository   string // the source repository's URL
	Commit       string // the source commit, hex
	Ref          string // the ref built (refs/tags/v26.1.3)
	Workflow     string // the workflow file built with (GitHub Actions)
	InvocationID string // this run of the build (a URL of the CI run)
	EventName    string // what started the run (GitHub Actions: push, workflow_dispatch...)
	RunnerEnv    string // github-hosted or self-hosted (GitHub Actions)
	GitHub       bool   // the fields came from GitHub Actions' environment
}

// ProvenanceFromEnv reads a GitHub Actions job's identity from its
// environment variables (getenv is os.Getenv); outside GitHub Actions it
// returns the zero Provenance.
func ProvenanceFromEnv(getenv func(string) string) Provenance {
	if getenv("GITHUB_ACTIONS") != "true" {
		return Provenance{}
	}
	server := strings.TrimRight(getenv("GITHUB_SERVER_URL"), "/")
	repo := getenv("GITHUB_REPOSITORY")
	p := Provenance{
		Commit:    getenv("GITHUB_SHA"),
		Ref:       getenv("GITHUB_REF"),
		EventName: getenv("GITHUB_EVENT_NAME"),
		RunnerEnv: getenv("RUNNER_ENVIRONMENT"),
		GitHub:    true,
	}
	if server == "" {
		return p
	}
	if repo != "" {
		p.Repository = server + "/" + repo
		if id := getenv("GITHUB_RUN_ID"); id != "" {
			p.InvocationID = server + "/" + repo + "/actions/runs/" + id
			if at := getenv("GITHUB_RUN_ATTEMPT"); at != "" {
				p.InvocationID += "/attempts/" + at
			}
		}
	}
	// GITHUB_WORKFLOW_REF is owner/repo/.github/workflows/release.yml@refs/tags/v1.
	if wr := getenv("GITHUB_WORKFLOW_REF"); wr != "" {
		p.BuilderID = server + "/" + wr
		if repo != "" {
			if file, _, ok := strings.Cut(strings.TrimPrefix(wr, repo+"/"), "@"); ok && file != wr {
				p.Workflow = file
			}
		}
	}
	return p
}

// Summary is what releases.json keeps of p for the page; nil when
// nothing is known of the build.
func (p Provenance) Summary() *ReleaseProvenance {
	if p.IsZero() {
		return nil
	}
	return &ReleaseProvenance{BuilderID: p.BuilderID, Repository: p.Repository, Commit: p.Commit, Ref: p.Ref, BuildID: p.InvocationID}
}

// IsZero reports whether nothing at all is known of the build.
func (p Provenance) IsZero() bool { return p == Provenance{} || p == Provenance{GitHub: true} }

// Validate refuses fields that cannot go into a statement as they are:
// control characters, invalid UTF-8, oversized values, a commit that is
// no hex object name, and a provenance with no builder.
func (p Provenance) Validate() error {
	if p.IsZero() {
		return nil
	}
	var errs []error
	for _, f := range []struct{ name, v string }{
		{"builder id", p.BuilderID}, {"source repository", p.Repository}, {"source commit", p.Commit},
		{"source ref", p.Ref}, {"workflow", p.Workflow}, {"build id", p.InvocationID},
		{"event name", p.EventName}, {"runner environment", p.RunnerEnv},
	} {
		if err := checkProvenanceField(f.v); err != nil {
			errs = append(errs, fmt.Errorf("provenance %s %.40q: %w", f.name, f.v, err))
		}
	}
	if p.Commit != "" && !isHexCommit(p.Commit) {
		errs = append(errs, fmt.Errorf("provenance source commit %.80q: not a commit's object name (40 or 64 hex digits)", p.Commit))
	}
	if p.BuilderID == "" {
		errs = append(errs, errors.New("provenance: the build is described but its builder is not (give --builder-id, or GITHUB_SERVER_URL and GITHUB_WORKFLOW_REF in GitHub Actions)"))
	}
	return errors.Join(errs...)
}

func checkProvenanceField(s string) error {
	if len(s) > MaxProvenanceField {
		return fmt.Errorf("%d bytes, at most %d", len(s), MaxProvenanceField)
	}
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return fmt.Errorf("control character %U", r)
		}
	}
	return nil
}

func isHexCommit(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// slsaPredicate is a SLSA provenance v1 predicate.
type slsaPredicate struct {
	BuildDefinition struct {
		BuildType            string               `json:"buildType"`
		ExternalParameters   map[string]any       `json:"externalParameters"`
		InternalParameters   map[string]any       `json:"internalParameters,omitempty"`
		ResolvedDependencies []resourceDescriptor `json:"resolvedDependencies,omitempty"`
	} `json:"buildDefinition"`
	RunDetails struct {
		Builder struct {
			ID string `json:"id"`
		} `json:"builder"`
		Metadata *struct {
			InvocationID string `json:"invocationId"`
		} `json:"metadata,omitempty"`
	} `json:"runDetails"`
}

type resourceDescriptor struct {
	URI    string            `json:"uri,omitempty"`
	Digest map[string]string `json:"digest,omitempty"`
}

// predicate is p as a SLSA provenance v1 predicate, with only the fields
// known.
func (p Provenance) predicate() slsaPredicate {
	var sp slsaPredicate
	sp.BuildDefinition.ExternalParameters = map[string]any{}
	set := func(m map[string]string, k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	if p.GitHub {
		sp.BuildDefinition.BuildType = BuildTypeGitHub
		wf := map[string]string{}
		set(wf, "ref", p.Ref)
		set(wf, "repository", p.Repository)
		set(wf, "path", p.Workflow)
		if len(wf) > 0 {
			sp.BuildDefinition.ExternalParameters["workflow"] = wf
		}
		gh := map[string]string{}
		set(gh, "event_name", p.EventName)
		set(gh, "runner_environment", p.RunnerEnv)
		if len(gh) > 0 {
			sp.BuildDefinition.InternalParameters = map[string]any{"github": gh}
		}
	} else {
		sp.BuildDefinition.BuildType = BuildTypeWharf
		src := map[string]string{}
		set(src, "repository", p.Repository)
		set(src, "ref", p.Ref)
		if len(src) > 0 {
			sp.BuildDefinition.ExternalParameters["source"] = src
		}
	}
	if p.Repository != "" || p.Commit != "" {
		d := resourceDescriptor{}
		if p.Repository != "" {
			d.URI = "git+" + p.Repository
			if p.Ref != "" {
				d.URI += "@" + p.Ref
			}
		}
		if p.Commit != "" {
			d.Digest = map[string]string{"gitCommit": p.Commit}
		}
		sp.BuildDefinition.ResolvedDependencies = []resourceDescriptor{d}
	}
	sp.RunDetails.Builder.ID = p.BuilderID
	if p.InvocationID != "" {
		sp.RunDetails.Metadata = &struct {
			InvocationID string `json:"invocationId"`
		}{p.InvocationID}
	}
	return sp
}

// ProvenanceStatement is the in-toto statement of p about the file name
// with SHA-256 sha256hex.
func ProvenanceStatement(p Provenance, name, sha256hex string) (*Statement, error) {
	return NewStatement(name, sha256hex, PredicateSLSA, p.predicate())
}
