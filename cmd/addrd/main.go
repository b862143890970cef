// Command addrd serves the /v1 address-data API: requesters subscribe to
// blockchain addresses and read their balances and transactions, which
// addrd fetches from a chain node. Run "addrd help" for the commands.
package main

import (
	"os"

	"github.com/wharfhq/wharf/internal/shell"
)

func main() {
	os.Exit(shell.Main(newApp(os.Stdout, os.Stderr), os.Args, os.Stderr))
}
