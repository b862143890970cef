// Command wharf publishes signed releases into a directory or an S3 bucket
// and serves them to customers. Run "wharf help" for the commands.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newApp(os.Stdout, os.Stderr).Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "wharf:", err)
		os.Exit(1)
	}
}
