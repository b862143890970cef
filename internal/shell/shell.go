// Package shell is what both commands, wharf and addrd, share around
// their subcommands, so that someone who knows one knows the other: the
// exit codes and usage errors (exit.go, usage.go), the logger and its
// flags (log.go), the syntax of rate flags (rate.go) and graceful
// shutdown (serve.go).
package shell

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"
)

// Main runs app on args (os.Args), prints an error once as "NAME: error"
// on stderr, and returns the exit code for os.Exit: 0 ok, ExitFailure for
// the command's own failure, ExitUsage for usage and I/O errors.
func Main(app *cli.App, args []string, stderr io.Writer) int {
	err := app.Run(args)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v\n", app.Name, err)
	return ExitCode(err)
}
