package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/site/auth"
)

func userCommand() *cli.Command {
	return &cli.Command{
		Name:  "user",
		Usage: "manage users, who download with access tokens through their organisations",
		Description: `Example:
   wharf user add alice --org acme
   wharf user remove alice            # her tokens are refused from now on
   wharf user list`,
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "make a user a member of an organisation (creating the user when new)",
				ArgsUsage: "NAME",
				Description: `Example:
   wharf user add alice --org acme`,
				Flags: []cli.Flag{
					dbFlag(),
					&cli.StringFlag{Name: "org", Required: true, Usage: "the `ORG` to join", EnvVars: []string{"WHARF_USER_ORG"}},
				},
				Action: withDB(func(ctx context.Context, c *cli.Context, db *auth.DB) error {
					name, err := oneArg(c, "NAME")
					if err != nil {
						return err
					}
					if err := db.AddUser(ctx, name, c.String("org")); err != nil {
						return fmt.Errorf("user add: %w", err)
					}
					fmt.Fprintf(c.App.Writer, "user %s is a member of %s\n", name, c.String("org"))
					return nil
				}),
			},
			{
				Name:      "remove",
				Usage:     "remove a user from an organisation, or altogether (revoking the user's tokens)",
				ArgsUsage: "NAME",
				Description: `Without --org the user is deleted and every access token issued to it
is refused from the next request on.

Example:
   wharf user remove alice --org acme
   wharf user remove alice`,
				Flags: []cli.Flag{
					dbFlag(),
					&cli.StringFlag{Name: "org", Usage: "leave only this `ORG`", EnvVars: []string{"WHARF_USER_ORG"}},
				},
				Action: withDB(func(ctx context.Context, c *cli.Context, db *auth.DB) error {
					name, err := oneArg(c, "NAME")
					if err != nil {
						return err
					}
					if err := db.RemoveUser(ctx, name, c.String("org")); err != nil {
						return fmt.Errorf("user remove: %w", err)
					}
					if c.String("org") != "" {
						fmt.Fprintf(c.App.Writer, "user %s left %s\n", name, c.String("org"))
					} else {
						fmt.Fprintf(c.App.Writer, "user %s removed; its tokens are refused\n", name)
					}
					return nil
				}),
			},
			{
				Name:  "list",
				Usage: "list the users and their organisations",
				Description: `Example:
   wharf user list`,
				Flags: []cli.Flag{dbFlag()},
				Action: withDB(func(ctx context.Context, c *cli.Context, db *auth.DB) error {
					users, err := db.Users(ctx)
					if err != nil {
						return fmt.Errorf("user list: %w", err)
					}
					tw := newTable(c.App.Writer, "NAME\tORGS\tCREATED")
					for _, u := range users {
						fmt.Fprintf(tw, "%s\t%s\t%s\n", u.Name, strings.Join(u.Orgs, ","), when(u.CreatedAt))
					}
					return tw.Flush()
				}),
			},
		},
	}
}
