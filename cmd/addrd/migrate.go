package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

func migrateCommand() *cli.Command {
	return &cli.Command{
		Name:   "migrate",
		Usage:  "not implemented yet",
		Action: func(*cli.Context) error { return errors.New("migrate: not implemented yet") },
	}
}
