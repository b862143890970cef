package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/buildinfo"
)

// newApp builds the CLI; tests run commands in-process and read what they print.
func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:      "wharf",
		Usage:     "publish signed release binaries and images, and serve them",
		Version:   buildinfo.Read().String(),
		Writer:    stdout,
		ErrWriter: stderr,
		// Errors are printed once, by main.
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{
			keygenCommand(),
			initCommand(),
			checkCommand(),
			publishCommand(),
			verifyCommand(),
			serveCommand(),
			orgCommand(),
			userCommand(),
			apikeyCommand(),
			tokenCommand(),
			hostingCommand(),
			channelCommand(),
		},
	}
	app.Action = unknownCommand(app.Commands, "")
	app.OnUsageError = onUsageError
	usageErrors(app.Commands, "")
	return app
}

// usageErrors makes every flag error of the commands a usage error (exit
// 2), and a command with subcommands refuse an unknown one with the list.
func usageErrors(cmds []*cli.Command, parent string) {
	for _, c := range cmds {
		if c.OnUsageError == nil {
			c.OnUsageError = onUsageError
		}
		if len(c.Subcommands) > 0 {
			if c.Action == nil {
				c.Action = unknownCommand(c.Subcommands, parent+c.Name+" ")
			}
			usageErrors(c.Subcommands, parent+c.Name+" ")
		}
	}
}

func onUsageError(c *cli.Context, err error, _ bool) error {
	return usageError{err}
}

// unknownCommand answers a command line whose command is not one of cmds
// with the list of them (exit 2), and one without any with the help.
func unknownCommand(cmds []*cli.Command, parent string) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.NArg() == 0 {
			return cli.ShowSubcommandHelp(c)
		}
		var names []string
		for _, cmd := range cmds {
			if !cmd.Hidden && cmd.Name != "help" {
				names = append(names, cmd.Name)
			}
		}
		return usageError{fmt.Errorf("unknown command %q; the commands of wharf %sare: %s (wharf %shelp COMMAND)",
			c.Args().First(), parent, strings.Join(names, ", "), parent)}
	}
}

// Exit codes, as docs/design.md fixes them.
const (
	exitFailure = 1 // the command's own failure (wharf verify: an invalid signature)
	exitUsage   = 2 // usage or I/O errors
)

// usageError is a command line that cannot be run as given, or an I/O
// error: exit 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// ExitCode implements cli.ExitCoder.
func (e usageError) ExitCode() int { return exitUsage }
