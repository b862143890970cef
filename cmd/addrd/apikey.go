package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/store"
)

func apikeyCommand() *cli.Command {
	return &cli.Command{
		Name:  "apikey",
		Usage: "create, revoke and list the API keys requesters authenticate with",
		Description: `An API key belongs to an account (--name); an account may have several
keys and its subscriptions are shared by all of them. Requests use HTTP
basic auth with API_ID as the user and API_SECRET as the password.

Example:
   addrd apikey create --name alice     # the last line is API_ID:API_SECRET
   addrd apikey list
   addrd apikey revoke akd2c0...`,
		Subcommands: []*cli.Command{
			{
				Name:      "create",
				Usage:     "create a key; prints API_ID:API_SECRET alone on the last line (the secret is shown once)",
				UsageText: "addrd apikey create --name NAME [--db DB]",
				Description: `Example:
   addrd apikey create --name alice
   KEY=$(addrd apikey create --name alice | tail -n 1); curl -u "$KEY" http://127.0.0.1:8090/v1/addresses`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "name", Required: true, EnvVars: []string{"ADDRD_APIKEY_NAME"},
						Usage: "the account `NAME` the key belongs to (created if new)"},
					dbFlag(),
				},
				Action: apikeyCreate,
			},
			{
				Name:        "revoke",
				Usage:       "revoke a key at once",
				UsageText:   "addrd apikey revoke [--db DB] API_ID",
				Description: "Example:\n   addrd apikey revoke akd2c0ffee0123456789abcd",
				Flags:       []cli.Flag{dbFlag()},
				Action:      apikeyRevoke,
			},
			{
				Name:        "list",
				Usage:       "list the keys, newest first (never their secrets)",
				UsageText:   "addrd apikey list [--db DB]",
				Description: "Example:\n   addrd apikey list --db postgres://addrd@db/addrd",
				Flags:       []cli.Flag{dbFlag()},
				Action:      apikeyList,
			},
		},
	}
}

// openDB opens the --db database, migrated.
func openDB(c *cli.Context) (*store.DB, error) {
	return store.Open(c.Context, c.String("db"), store.WithLegacyDetail(evm.LegacyDetail))
}

func apikeyCreate(c *cli.Context) error {
	if c.NArg() > 0 {
		return shell.Usagef("apikey create: unexpected argument %q (the account is --name)", c.Args().First())
	}
	db, err := openDB(c)
	if err != nil {
		return fmt.Errorf("apikey create: %w", err)
	}
	defer db.Close()
	key, secret, err := db.CreateAPIKey(c.Context, c.String("name"))
	if err != nil {
		return fmt.Errorf("apikey create: %w", err)
	}
	fmt.Fprintf(c.App.Writer, "created API key %s for account %s; the secret is shown only now.\n", key.ID, key.Account)
	fmt.Fprintf(c.App.Writer, "use it as HTTP basic auth, user API_ID and password API_SECRET (curl -u API_ID:API_SECRET):\n")
	fmt.Fprintf(c.App.Writer, "%s:%s\n", key.ID, secret)
	return nil
}

func apikeyRevoke(c *cli.Context) error {
	if c.NArg() != 1 {
		return shell.Usagef("apikey revoke: give one API_ID: addrd apikey revoke [--db DB] API_ID")
	}
	id := c.Args().First()
	db, err := openDB(c)
	if err != nil {
		return fmt.Errorf("apikey revoke: %w", err)
	}
	defer db.Close()
	err = db.RevokeAPIKey(c.Context, id)
	if errors.Is(err, query.ErrNotFound) {
		return fmt.Errorf("apikey revoke: no active key %s (see addrd apikey list)", id)
	}
	if err != nil {
		return fmt.Errorf("apikey revoke: %w", err)
	}
	fmt.Fprintf(c.App.Writer, "revoked API key %s\n", id)
	return nil
}

func apikeyList(c *cli.Context) error {
	if c.NArg() > 0 {
		return shell.Usagef("apikey list: unexpected argument %q", c.Args().First())
	}
	db, err := openDB(c)
	if err != nil {
		return fmt.Errorf("apikey list: %w", err)
	}
	defer db.Close()
	keys, err := db.ListAPIKeys(c.Context)
	if err != nil {
		return fmt.Errorf("apikey list: %w", err)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "API_ID\tACCOUNT\tCREATED\tLAST USED\tREVOKED")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.ID, k.Account, when(k.Created), when(k.LastUsed), when(k.Revoked))
	}
	return tw.Flush()
}

// when formats a time for a listing; "-" for never.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
