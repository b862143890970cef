package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

func keygenCommand() *cli.Command {
	return &cli.Command{
		Name:   "keygen",
		Usage:  "not implemented yet",
		Action: func(*cli.Context) error { return errors.New("keygen: not implemented yet") },
	}
}
