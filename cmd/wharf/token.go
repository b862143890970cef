package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

func tokenCommand() *cli.Command {
	return &cli.Command{
		Name:   "token",
		Usage:  "not implemented yet",
		Action: func(*cli.Context) error { return errors.New("token: not implemented yet") },
	}
}
