package main

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
)

// newApp builds the CLI; tests run commands in-process and read what they print.
func newApp(stdout, stderr io.Writer) *cli.App {
	return shell.NewApp("wharf", "publish signed release binaries and images, and serve them", stdout, stderr,
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
	)
}
