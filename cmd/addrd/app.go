package main

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/buildinfo"
	"github.com/wharfhq/wharf/internal/shell"
)

// newApp builds the CLI; tests run commands in-process and read what they print.
func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:      "addrd",
		Usage:     "the address-data service: subscriptions, balances and transactions under /v1",
		Version:   buildinfo.Read().String(),
		Writer:    stdout,
		ErrWriter: stderr,
		Commands: []*cli.Command{
			serveCommand(),
			apikeyCommand(),
			migrateCommand(),
			receiveCommand(),
		},
	}
	shell.Setup(app)
	return app
}
