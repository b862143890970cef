package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/store"
)

func migrateCommand() *cli.Command {
	return &cli.Command{
		Name:  "migrate",
		Usage: "apply the pending database migrations (serve does this at start too)",
		Description: `The migrations are embedded in addrd, numbered, applied in order and
recorded in the table addrd_migrations; running it again applies nothing.
Several processes migrating one PostgreSQL database at once are serialised.

Example:
   addrd migrate --db addrd.db
   addrd migrate --db postgres://addrd@db/addrd?sslmode=disable`,
		Flags:  []cli.Flag{dbFlag()},
		Action: migrate,
	}
}

func migrate(c *cli.Context) error {
	if c.NArg() > 0 {
		return shell.Usagef("migrate: unexpected argument %q", c.Args().First())
	}
	db, err := store.OpenNoMigrate(c.String("db"), store.WithLegacyDetail(evm.LegacyDetail)) // every chain was an EVM chain before families
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer db.Close()
	applied, err := db.Migrate(c.Context)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, m := range applied {
		fmt.Fprintf(c.App.Writer, "applied %04d_%s\n", m.Version, m.Name)
	}
	if len(applied) == 0 {
		fmt.Fprintln(c.App.Writer, "up to date")
	}
	return nil
}
