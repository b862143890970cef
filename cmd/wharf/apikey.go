package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/site/auth"
)

func apikeyCommand() *cli.Command {
	return &cli.Command{
		Name:  "apikey",
		Usage: "manage organisation API keys (for machines: curl -u KEY:)",
		Description: `Example:
   KEY=$(wharf apikey create --org acme | tail -n 1)
   curl -fLO -u "$KEY:" http://127.0.0.1:8080/x86/engine
   wharf apikey list
   wharf apikey revoke 1a2b3c4d5e6f`,
		Subcommands: []*cli.Command{
			{
				Name:  "create",
				Usage: "create an API key for an organisation; the key is printed once, alone on the last line",
				Description: `Only a hash of the key is stored: copy it now.

Example:
   wharf apikey create --org acme | tail -n 1`,
				Flags: []cli.Flag{
					dbFlag(),
					&cli.StringFlag{Name: "org", Required: true, Usage: "the `ORG` the key belongs to", EnvVars: []string{"WHARF_APIKEY_ORG"}},
				},
				Action: withDB(func(ctx context.Context, c *cli.Context, db *auth.DB) error {
					if c.NArg() != 0 {
						return fmt.Errorf("apikey create: unexpected argument %q (the organisation is --org)", c.Args().First())
					}
					k, secret, err := db.CreateAPIKey(ctx, c.String("org"))
					if err != nil {
						return fmt.Errorf("apikey create: %w", err)
					}
					fmt.Fprintf(c.App.Writer, "API key %s for organisation %s (shown once; only its hash is stored):\n%s\n", k.ID, k.Org, secret)
					return nil
				}),
			},
			{
				Name:      "revoke",
				Usage:     "revoke an API key by id",
				ArgsUsage: "ID",
				Description: `Example:
   wharf apikey revoke 1a2b3c4d5e6f`,
				Flags: []cli.Flag{dbFlag()},
				Action: withDB(func(ctx context.Context, c *cli.Context, db *auth.DB) error {
					id, err := oneArg(c, "ID")
					if err != nil {
						return err
					}
					if err := db.RevokeAPIKey(ctx, id); err != nil {
						return fmt.Errorf("apikey revoke: %w", err)
					}
					fmt.Fprintf(c.App.Writer, "API key %s revoked\n", id)
					return nil
				}),
			},
			{
				Name:  "list",
				Usage: "list the API keys with their last use",
				Description: `Example:
   wharf apikey list`,
				Flags: []cli.Flag{dbFlag()},
				Action: withDB(func(ctx context.Context, c *cli.Context, db *auth.DB) error {
					keys, err := db.APIKeys(ctx)
					if err != nil {
						return fmt.Errorf("apikey list: %w", err)
					}
					tw := newTable(c.App.Writer, "ID\tORG\tCREATED\tLAST USED\tSTATUS")
					for _, k := range keys {
						last, status := "never", "active"
						if !k.LastUsedAt.IsZero() {
							last = when(k.LastUsedAt)
						}
						if !k.RevokedAt.IsZero() {
							status = "revoked " + when(k.RevokedAt)
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.ID, k.Org, when(k.CreatedAt), last, status)
					}
					return tw.Flush()
				}),
			},
		},
	}
}
