package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

func apikeyCommand() *cli.Command {
	return &cli.Command{
		Name:   "apikey",
		Usage:  "not implemented yet",
		Action: func(*cli.Context) error { return errors.New("apikey: not implemented yet") },
	}
}
