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
		Name:      "wharf",
		Usage:     "publish signed release binaries and images, and serve them",
		Version:   buildinfo.Read().String(),
		Writer:    stdout,
		ErrWriter: stderr,
		Commands: []*cli.Command{
			keygenCommand(),
			initCommand(),
			checkCommand(),
			publishCommand(),
			verifyCommand(),
			serveCommand(),
			orgCommand(),
			userCommand(),
			apikeyCommand(),
			tokenCommand(),
			hostingCommand(),
			channelCommand(),
		},
	}
	shell.Setup(app)
	return app
}
