// Command wharf publishes signed releases into a directory or an S3 bucket
// and serves them to customers. Run "wharf help" for the commands.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

func main() {
	if err := newApp(os.Stdout, os.Stderr).Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "wharf:", err)
		os.Exit(exitCode(err))
	}
}

// exitCode is 2 for usage and I/O errors, 1 for any other failure.
func exitCode(err error) int {
	var ec cli.ExitCoder
	if errors.As(err, &ec) && ec.ExitCode() != 0 {
		return ec.ExitCode()
	}
	return exitFailure
}
