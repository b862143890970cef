// Command addrd serves the /v1 address-data API: requesters subscribe to
// blockchain addresses and read their balances and transactions, which
// addrd fetches from a chain node. Run "addrd help" for the commands.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newApp(os.Stdout, os.Stderr).Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "addrd:", err)
		os.Exit(1)
	}
}
