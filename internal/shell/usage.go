package shell

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// Setup gives app the behaviour both commands share: errors are printed
// once, by Main; every flag error of every command is a usage error
// (exit 2); a command with subcommands answers an unknown one with the
// list of them (exit 2), and none with its help; the help lists flags in
// urfave/cli's own layout (see FlagString).
func Setup(app *cli.App) {
	restoreHelp()
	app.ExitErrHandler = func(*cli.Context, error) {}
	if app.Action == nil {
		app.Action = unknownCommand(app.Name, app.Commands, "")
	}
	app.OnUsageError = onUsageError
	usageErrors(app.Name, app.Commands, "")
}

// usageErrors sets the usage behaviour of Setup on cmds and their
// subcommands.
func usageErrors(name string, cmds []*cli.Command, parent string) {
	for _, c := range cmds {
		if c.OnUsageError == nil {
			c.OnUsageError = onUsageError
		}
		if len(c.Subcommands) > 0 {
			if c.Action == nil {
				c.Action = unknownCommand(name, c.Subcommands, parent+c.Name+" ")
			}
			usageErrors(name, c.Subcommands, parent+c.Name+" ")
		}
	}
}

func onUsageError(c *cli.Context, err error, _ bool) error {
	return UsageError{err}
}

// unknownCommand answers a command line whose command is not one of cmds
// with the list of them (exit 2), and one without any with the help.
func unknownCommand(name string, cmds []*cli.Command, parent string) cli.ActionFunc {
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
		return Usagef("unknown command %q; the commands of %s %sare: %s (%s %shelp COMMAND)",
			c.Args().First(), name, parent, strings.Join(names, ", "), name, parent)
	}
}
