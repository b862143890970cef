package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/site/auth"
)

func orgCommand() *cli.Command {
	return &cli.Command{
		Name:  "org",
		Usage: "manage organisations and their permission level (basic or full)",
		Description: `An organisation's level decides what its members and API keys may
download: basic artifacts need any organisation, full ones a full one.

Example:
   wharf org create acme --level basic
   wharf org set-level acme full
   wharf org list`,
		Subcommands: []*cli.Command{
			{
				Name:      "create",
				Usage:     "create an organisation",
				ArgsUsage: "NAME",
				Description: `Example:
   wharf org create acme --level full`,
				Flags: []cli.Flag{
					dbFlag(),
					&cli.StringFlag{Name: "level", Value: "basic", Usage: "permission `LEVEL`: basic or full", EnvVars: []string{"WHARF_ORG_LEVEL"}},
				},
				Action: withDB(func(ctx context.Context, c *cli.Context, db *auth.DB) error {
					name, err := oneArg(c, "NAME")
					if err != nil {
						return err
					}
					o, err := db.CreateOrg(ctx, name, c.String("level"))
					if err != nil {
						return fmt.Errorf("org create: %w", err)
					}
					fmt.Fprintf(c.App.Writer, "created organisation %s (level %s)\n", o.Name, o.Level)
					return nil
				}),
			},
			{
				Name:      "set-level",
				Usage:     "change the permission level of an organisation",
				ArgsUsage: "NAME LEVEL",
				Description: `Takes effect at the next request of its members and keys.

Example:
   wharf org set-level acme full`,
				Flags: []cli.Flag{dbFlag()},
				Action: withDB(func(ctx context.Context, c *cli.Context, db *auth.DB) error {
					if c.NArg() != 2 {
						return fmt.Errorf("org set-level: want NAME LEVEL, got %d arguments", c.NArg())
					}
					name, level := c.Args().Get(0), c.Args().Get(1)
					if err := db.SetOrgLevel(ctx, name, level); err != nil {
						return fmt.Errorf("org set-level: %w", err)
					}
					fmt.Fprintf(c.App.Writer, "organisation %s now has level %s\n", name, level)
					return nil
				}),
			},
			{
				Name:  "list",
				Usage: "list the organisations",
				Description: `Example:
   wharf org list`,
				Flags: []cli.Flag{dbFlag()},
				Action: withDB(func(ctx context.Context, c *cli.Context, db *auth.DB) error {
					if c.NArg() != 0 {
						return fmt.Errorf("org list: unexpected argument %q", c.Args().First())
					}
					orgs, err := db.Orgs(ctx)
					if err != nil {
						return fmt.Errorf("org list: %w", err)
					}
					tw := newTable(c.App.Writer, "NAME\tLEVEL\tCREATED")
					for _, o := range orgs {
						fmt.Fprintf(tw, "%s\t%s\t%s\n", o.Name, o.Level, when(o.CreatedAt))
					}
					return tw.Flush()
				}),
			},
		},
	}
}

// oneArg returns the one positional argument of a command.
func oneArg(c *cli.Context, what string) (string, error) {
	if c.NArg() != 1 {
		return "", fmt.Errorf("%s: want one %s, got %d arguments (%s)", strings.Join(shell.CommandPath(c), " "), what, c.NArg(), strings.Join(c.Args().Slice(), " "))
	}
	return c.Args().First(), nil
}
