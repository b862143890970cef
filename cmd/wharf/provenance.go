package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/publish"
)

// provenanceFlags describe the build for CI systems other than GitHub
// Actions (whose environment wharf reads itself); a flag set overrides
// what the environment says.
func provenanceFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "builder-id", Usage: "the build's builder `ID` (a URI) for the provenance; GitHub Actions: its workflow ref", EnvVars: []string{"WHARF_BUILDER_ID"}},
		&cli.StringFlag{Name: "source-repo", Usage: "the source repository's `URL` for the provenance; GitHub Actions: GITHUB_REPOSITORY", EnvVars: []string{"WHARF_SOURCE_REPO"}},
		&cli.StringFlag{Name: "source-commit", Usage: "the source `COMMIT` (hex) for the provenance; GitHub Actions: GITHUB_SHA", EnvVars: []string{"WHARF_SOURCE_COMMIT"}},
		&cli.StringFlag{Name: "source-ref", Usage: "the source `REF` built for the provenance; GitHub Actions: GITHUB_REF", EnvVars: []string{"WHARF_SOURCE_REF"}},
		&cli.StringFlag{Name: "build-id", Usage: "this build run's `URI` for the provenance; GitHub Actions: its run's URL", EnvVars: []string{"WHARF_BUILD_ID"}},
	}
}

// provenanceFrom is the build's provenance: GitHub Actions' environment,
// with the flags set over it.
func provenanceFrom(c *cli.Context) publish.Provenance {
	p := publish.ProvenanceFromEnv(os.Getenv)
	for _, f := range []struct {
		flag string
		dst  *string
	}{
		{"builder-id", &p.BuilderID}, {"source-repo", &p.Repository}, {"source-commit", &p.Commit},
		{"source-ref", &p.Ref}, {"build-id", &p.InvocationID},
	} {
		if c.IsSet(f.flag) {
			*f.dst = c.String(f.flag)
		}
	}
	return p
}
