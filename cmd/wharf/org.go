package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

func orgCommand() *cli.Command {
	return &cli.Command{
		Name:   "org",
		Usage:  "not implemented yet",
		Action: func(*cli.Context) error { return errors.New("org: not implemented yet") },
	}
}
