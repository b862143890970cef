package main

import (
	"io"

	"github.com/urfave/cli/v2"
)

// newApp builds the CLI; tests run commands in-process and read what they print.
func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:      "wharf",
		Usage:     "publish signed release binaries and images, and serve them",
		Writer:    stdout,
		ErrWriter: stderr,
		// Errors are printed once, by main.
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{
			keygenCommand(),
			publishCommand(),
			verifyCommand(),
			serveCommand(),
			orgCommand(),
			userCommand(),
			apikeyCommand(),
			tokenCommand(),
			hostingCommand(),
		},
	}
}
