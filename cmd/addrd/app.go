package main

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
)

// newApp builds the CLI; tests run commands in-process and read what they print.
func newApp(stdout, stderr io.Writer) *cli.App {
	return shell.NewApp("addrd", "the address-data service: subscriptions, balances and transactions under /v1", stdout, stderr,
		serveCommand(),
		apikeyCommand(),
		migrateCommand(),
		quarantineCommand(),
		chainCommand(),
		receiveCommand(),
	)
}
