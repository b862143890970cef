package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

func publishCommand() *cli.Command {
	return &cli.Command{
		Name:   "publish",
		Usage:  "not implemented yet",
		Action: func(*cli.Context) error { return errors.New("publish: not implemented yet") },
	}
}
