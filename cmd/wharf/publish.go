package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/publish"
)

func publishCommand() *cli.Command {
	return &cli.Command{
		Name:      "publish",
		Usage:     "publish a signed release from a build's output into a directory or an S3 bucket",
		ArgsUsage: "INPUT_DIR",
		Description: `INPUT_DIR holds what the build produced, named without the version:
BINARY-OS-PLATFORM (a raw executable, packed into a reproducible .tar.gz),
BINARY-OS-PLATFORM.tar.gz (a ready archive) and IMAGE-PLATFORM.tar (docker
save), OS linux or macos, PLATFORM amd64 or arm64. Every file must match a
configured artifact and every configured artifact must have its files,
unless --allow-missing.

Writes artifacts and .sig files, SHA256SUMS, releases.json, _redirects,
index.html, dl.pub and install, and moves latest (or preview) last, only
forward, with the signed channel record (channel) that install scripts
resolve latest and preview through. A version is immutable: publishing it again with the same bytes
does nothing, with other bytes is refused. A failed publish leaves the
previous release served; run it again to finish.

KEYREF is a PEM file (wharf keygen) or, in a wharf built with -tags kms,
a KMS URI: awskms://, gcpkms://, azurekms://, hashivault://. STORE is a
directory or s3://bucket/prefix (credentials from AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, ...).

Examples:
   wharf publish --version 26.1.2 --key dl.key --store ./public \
       --base-url https://dl.example.com --notes NOTES.md ./dist
   wharf publish --version 26.1.3-pre.4 --key awskms:///alias/wharf \
       --store s3://releases/dl --base-url https://dl.example.com ./dist
   wharf publish --dry-run --version 26.1.2 --key dl.key --base-url https://dl.example.com ./dist`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "version", Usage: "release `VERSION`: YY.F.P or YY.F.P-pre.C", Required: true, EnvVars: []string{"WHARF_VERSION"}},
			&cli.StringFlag{Name: "key", Usage: "signing key `KEYREF`: PEM file or KMS URI", Required: true, EnvVars: []string{"WHARF_KEY"}},
			&cli.StringFlag{Name: "store", Value: "./public", Usage: "`STORE`: a directory or s3://bucket/prefix", EnvVars: []string{"WHARF_STORE"}},
			&cli.StringFlag{Name: "base-url", Usage: "the download server's `URL`, for the install script and page", Required: true, EnvVars: []string{"WHARF_BASE_URL"}},
			&cli.StringFlag{Name: "config", Usage: "release contents `FILE` (wharf.toml); default: the built-in artifacts", EnvVars: []string{"WHARF_CONFIG"}},
			&cli.StringFlag{Name: "notes", Usage: "release notes `FILE` (Markdown), shown on the download page and kept in releases.json", EnvVars: []string{"WHARF_NOTES"}},
			&cli.BoolFlag{Name: "dry-run", Usage: "print every key that would be written, write nothing", EnvVars: []string{"WHARF_DRY_RUN"}},
			&cli.BoolFlag{Name: "allow-missing", Usage: "publish a partial release when configured artifacts have no file", EnvVars: []string{"WHARF_ALLOW_MISSING"}},
			&cli.StringFlag{Name: "s3-endpoint", Usage: "S3 API `ENDPOINT` for MinIO and other non-AWS stores: a URL (http://127.0.0.1:9000), or host:port for HTTPS", EnvVars: []string{"WHARF_S3_ENDPOINT"}},
			&cli.IntFlag{Name: "parallel", Value: 4, Usage: "`N` concurrent artifact uploads", EnvVars: []string{"WHARF_PARALLEL"}},
			&cli.DurationFlag{Name: "channel-expiry", Usage: "the signed channel record expires after `DURATION` (from 1m to 87600h); install scripts refuse it then, so re-sign it in time (wharf channel resign); unset: as long as the record there, or 720h", EnvVars: []string{"WHARF_CHANNEL_EXPIRY"}},
			&cli.StringFlag{Name: "input-dir", Hidden: true, EnvVars: []string{"WHARF_INPUT_DIR"}},
		}, provenanceFlags()...),
		Action: publishAction,
	}
}

func publishAction(c *cli.Context) error {
	inputDir := c.Args().First()
	if inputDir == "" {
		inputDir = c.String("input-dir")
	}
	if inputDir == "" || c.NArg() > 1 {
		return shell.Usagef("publish: want one INPUT_DIR (see wharf publish --help)")
	}
	if err := kmsBuiltIn("publish", c.String("key")); err != nil {
		return err
	}
	ctx, stop := shell.SignalContext(c.Context)
	defer stop()

	// Everything that can be checked without the store is checked before
	// anything is printed or the store directory created.
	if _, err := publish.ParseVersion(c.String("version")); err != nil {
		return err
	}
	if err := publish.CheckBaseURL(c.String("base-url")); err != nil {
		return err
	}
	if c.Int("parallel") < 1 {
		return shell.Usagef("publish: --parallel %d: want 1 or more concurrent uploads", c.Int("parallel"))
	}
	notes, err := readNotes(c.String("notes"))
	if err != nil {
		return err
	}
	prov := provenanceFrom(c)
	if err := prov.Validate(); err != nil {
		return shell.Usagef("publish: %w", err)
	}
	cfg, err := publish.LoadConfig(c.String("config"))
	if err != nil {
		return err
	}
	inputs, err := cfg.ScanInput(inputDir, c.Bool("allow-missing"))
	if err != nil {
		return err
	}
	signer, err := publish.LoadSigner(ctx, c.String("key"))
	if err != nil {
		return err
	}
	store, closeStore, err := openStore(ctx, c.String("store"), storeOptions{S3Endpoint: c.String("s3-endpoint"), DryRun: c.Bool("dry-run")})
	if err != nil {
		return err
	}
	defer closeStore()
	p, err := publish.NewPublisher(store, signer, cfg, c.String("base-url"))
	if err != nil {
		return err
	}
	p.DryRun = c.Bool("dry-run")
	p.Notes = notes
	p.Provenance = prov
	p.Parallel = c.Int("parallel")
	p.KeepChannelExpiry = !c.IsSet("channel-expiry")
	if p.ChannelExpiry = c.Duration("channel-expiry"); !p.KeepChannelExpiry {
		if err := publish.CheckChannelExpiry(p.ChannelExpiry); err != nil {
			return shell.Usagef("publish: --channel-expiry: %w", err)
		}
	}
	p.Progress = progressFor(c)
	return runPublish(ctx, c, p, c.String("version"), inputs)
}

func runPublish(ctx context.Context, c *cli.Context, p *publish.Publisher, version string, inputs []publish.Input) error {
	out := c.App.Writer
	if !p.DryRun {
		p.Progress.Logf("publishing %s: %d artifacts to %s", version, len(inputs), c.String("store"))
	}
	res, err := p.Publish(ctx, version, inputs)
	if err != nil {
		return err
	}
	switch {
	case p.DryRun:
		for _, k := range res.Written {
			fmt.Fprintln(out, k)
		}
		fmt.Fprintf(out, "dry run: %d keys would be written; nothing was written\n", len(res.Written))
	case res.Existing && len(res.Written) == 0:
		// The progress said it is published already; this is the outcome.
		fmt.Fprintf(out, "nothing to do: every object of %s is in place\n", res.Version)
	default:
		fmt.Fprintf(out, "published %s: %d objects written; latest %s, preview %s\n",
			res.Version, len(res.Written), orNone(res.Latest), orNone(res.Preview))
	}
	return nil
}

// readNotes reads and checks the release notes of --notes ("" for none).
func readNotes(file string) (string, error) {
	if file == "" {
		return "", nil
	}
	f, err := os.Open(file)
	if err != nil {
		return "", shell.Usagef("publish: --notes: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, publish.MaxNotes+1))
	if err != nil {
		return "", shell.Usagef("publish: --notes: %w", err)
	}
	if _, err := publish.RenderNotes(b); err != nil {
		return "", fmt.Errorf("publish: --notes %s: %w", file, err)
	}
	return string(b), nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// progressFor draws progress bars on a terminal and writes plain lines
// otherwise (CI logs, tests).
func progressFor(c *cli.Context) publish.Progress {
	w := c.App.ErrWriter
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return publish.TerminalProgress(w, time.Now)
	}
	return publish.LineProgress(w, time.Now)
}

// kmsBuiltIn refuses a KMS URI for --key in a wharf built without the
// cloud KMS providers (nokms.go), before anything is read or written,
// saying how to build one that takes it.
func kmsBuiltIn(cmd, key string) error {
	if !publish.IsKMS(key) || kmsProviders {
		return nil
	}
	return shell.Usagef("%s: --key %s: this wharf is built without the cloud KMS providers (awskms://, gcpkms://, azurekms://, hashivault://); build it with them: make build TAGS=kms, or go build -tags kms ./cmd/wharf (the release workflow's wharf has them)", cmd, key)
}
