package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

func userCommand() *cli.Command {
	return &cli.Command{
		Name:   "user",
		Usage:  "not implemented yet",
		Action: func(*cli.Context) error { return errors.New("user: not implemented yet") },
	}
}
