// Command wharf publishes signed releases into a directory or an S3 bucket
// and serves them to customers. Run "wharf help" for the commands.
package main

import (
	"os"

	"github.com/wharfhq/wharf/internal/shell"
)

func main() {
	os.Exit(shell.Main(newApp(os.Stdout, os.Stderr), os.Args, os.Stderr))
}
