package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/publish"
)

func channelCommand() *cli.Command {
	return &cli.Command{
		Name:  "channel",
		Usage: "the signed channel record that install scripts resolve latest and preview through",
		Subcommands: []*cli.Command{
			{
				Name:  "resign",
				Usage: "sign the channel record again with a new expiry, without publishing",
				Description: `Writes the tree's channel record again: the same versions (or newer ones,
if latest or preview moved), the sequence one higher, issued now, expiring
after --expiry (30 days by default, at most 87600h). Install scripts
refuse an expired record, so that a mirror cannot keep a machine on an old
release for ever; run this from a scheduled job well within the expiry
(e.g. daily with --expiry 168h). The write is conditional on the record
it replaces: a publish running at the same time is never undone.

It also writes the install script again, carrying the new sequence (a
record older than the script is refused even on a machine that has seen
none), and signs again every SHA256SUMS and releases.json whose
signature is not one of metadata in its own context: run once on a tree
published by an earlier wharf, which signed them as it signs downloads,
to upgrade it. Give it the --config publish uses, for the install
script's list of binaries.

Examples:
   wharf channel resign --key dl.key --store ./public --expiry 168h
   wharf channel resign --key awskms:///alias/wharf-release \
       --store s3://releases/dl --config wharf.toml --expiry 168h`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "key", Usage: "signing key `KEYREF`: PEM file or KMS URI (the key publish signs with)", Required: true, EnvVars: []string{"WHARF_KEY"}},
					&cli.StringFlag{Name: "store", Value: "./public", Usage: "`STORE`: a directory or s3://bucket/prefix", EnvVars: []string{"WHARF_STORE"}},
					&cli.DurationFlag{Name: "expiry", Value: publish.DefaultChannelExpiry, Usage: "the new record expires after `DURATION` (from 1m to 87600h)", EnvVars: []string{"WHARF_CHANNEL_EXPIRY"}},
					&cli.StringFlag{Name: "base-url", Usage: "the download server's `URL` written into the record; default: the one it names", EnvVars: []string{"WHARF_BASE_URL"}},
					&cli.StringFlag{Name: "config", Usage: "release contents `FILE` (wharf.toml) publish uses; default: the built-in artifacts", EnvVars: []string{"WHARF_CONFIG"}},
					&cli.StringFlag{Name: "s3-endpoint", Usage: "S3 API `ENDPOINT` for MinIO and other non-AWS stores", EnvVars: []string{"WHARF_S3_ENDPOINT"}},
				},
				Action: channelResign,
			},
		},
	}
}

func channelResign(c *cli.Context) error {
	if c.NArg() > 0 {
		return shell.Usagef("channel resign: takes no arguments (see wharf channel resign --help)")
	}
	expiry := c.Duration("expiry")
	if err := publish.CheckChannelExpiry(expiry); err != nil {
		return shell.Usagef("channel resign: --expiry: %w", err)
	}
	if u := c.String("base-url"); u != "" {
		if err := publish.CheckBaseURL(u); err != nil {
			return shell.Usagef("channel resign: %w", err)
		}
	}
	cfg, err := publish.LoadConfig(c.String("config"))
	if err != nil {
		return err
	}
	if err := kmsBuiltIn("channel resign", c.String("key")); err != nil {
		return err
	}
	ctx, stop := shell.SignalContext(c.Context)
	defer stop()
	signer, err := publish.LoadSigner(ctx, c.String("key"))
	if err != nil {
		return err
	}
	store, closeStore, err := openStore(ctx, c.String("store"), storeOptions{S3Endpoint: c.String("s3-endpoint")})
	if err != nil {
		return err
	}
	defer closeStore()
	if _, err := store.Stat(ctx, publish.KeyManifest); err != nil {
		return fmt.Errorf("channel resign: %s holds no published tree (%w): publish first", c.String("store"), err)
	}
	baseURL := c.String("base-url")
	if baseURL == "" {
		if baseURL, err = publish.ChannelURL(ctx, store); err != nil {
			return fmt.Errorf("channel resign: %w", err)
		}
	}
	p, err := publish.NewPublisher(store, signer, cfg, baseURL)
	if err != nil {
		return fmt.Errorf("channel resign: %w", err)
	}
	p.Progress = progressFor(c)
	ch, written, err := p.Resign(ctx, expiry)
	if err != nil {
		return fmt.Errorf("channel resign: %w", err)
	}
	for _, k := range written {
		if k != publish.KeyChannel && k != publish.KeyInstall {
			fmt.Fprintf(c.App.ErrWriter, "signed %s again, as metadata\n", k)
		}
	}
	fmt.Fprintf(c.App.Writer, "channel: sequence %d, latest %s, preview %s, issued %s, expires %s\n",
		ch.Sequence, orNone(ch.Latest), orNone(ch.Preview), ch.Issued.Format(time.RFC3339), ch.Expires.Format(time.RFC3339))
	return nil
}
