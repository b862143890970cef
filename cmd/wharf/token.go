package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/site/auth"
)

func tokenCommand() *cli.Command {
	return &cli.Command{
		Name:  "token",
		Usage: "issue access tokens (one day, ES256) for users",
		Description: `Example:
   TOKEN=$(wharf token create --user alice | tail -n 1)
   curl -fLO -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8080/x86/engine`,
		Subcommands: []*cli.Command{
			{
				Name:  "create",
				Usage: "create a one-day access token for a user; the token is the last line printed",
				Description: `The token is signed with the issuer key kept in the database (made on
first use), which wharf serve checks it against.

Example:
   wharf token create --user alice | tail -n 1`,
				Flags: []cli.Flag{
					dbFlag(),
					&cli.StringFlag{Name: "user", Required: true, Usage: "the `NAME` of the user", EnvVars: []string{"WHARF_TOKEN_USER"}},
				},
				Action: withDB(func(ctx context.Context, c *cli.Context, db *auth.DB) error {
					if c.NArg() != 0 {
						return fmt.Errorf("token create: unexpected argument %q (the user is --user)", c.Args().First())
					}
					user := c.String("user")
					tok, exp, err := db.CreateToken(ctx, user)
					if errors.Is(err, auth.ErrNotFound) {
						return fmt.Errorf("token create: no user %s in %s; add one with: wharf user add %s --org ORG (wharf org list shows the organisations)", user, c.String("db"), user)
					}
					if err != nil {
						return fmt.Errorf("token create: %w", err)
					}
					fmt.Fprintf(c.App.Writer, "access token for %s, valid until %s:\n%s\n", c.String("user"), exp.UTC().Format(time.RFC3339), tok)
					return nil
				}),
			},
		},
	}
}
