package shell

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/didyoumean"
)

// Setup gives app the behaviour both commands share: errors are printed
// once, by Main; every flag error of every command is a usage error
// (exit 2) with the flag it may be a typo of; a command with subcommands
// answers an unknown one with the list of them and the one it may be a
// typo of (exit 2), and none with its help, whose USAGE line says
// "command"; flags may follow a command's arguments, and a missing
// required flag is a usage error with the command's usage line (see
// flagsAnywhere); the help lists flags in urfave/cli's own layout (see
// FlagString).
func Setup(app *cli.App) {
	restoreHelp()
	app.ExitErrHandler = func(*cli.Context, error) {}
	if app.Action == nil {
		app.Action = unknownCommand(app.Name, app.Commands, "")
	}
	app.OnUsageError = onUsageError(app.Name, "", func() []cli.Flag { return app.Flags })
	usageErrors(app.Name, app.Commands, "")
}

// usageErrors sets the usage behaviour of Setup on cmds and their
// subcommands.
func usageErrors(name string, cmds []*cli.Command, parent string) {
	for _, c := range cmds {
		if c.OnUsageError == nil {
			c.OnUsageError = onUsageError(name, parent+c.Name, func() []cli.Flag { return c.Flags })
		}
		if len(c.Subcommands) > 0 {
			if c.Action == nil {
				c.Action = unknownCommand(name, c.Subcommands, parent+c.Name+" ")
			}
			if c.UsageText == "" {
				c.UsageText = name + " " + parent + c.Name + " command [command options]"
			}
			usageErrors(name, c.Subcommands, parent+c.Name+" ")
		} else if c.Action != nil {
			flagsAnywhere(c)
		}
	}
}

// onUsageError makes a flag error of the command line a usage error,
// naming the flag that was meant when one is close to the one given. cmd
// is the command's path below the application name ("" for the root).
func onUsageError(name, cmd string, flags func() []cli.Flag) cli.OnUsageErrorFunc {
	prefix, line := "", name
	if cmd != "" {
		prefix, line = cmd+": ", name+" "+cmd
	}
	return func(c *cli.Context, err error, _ bool) error {
		const undefined = "flag provided but not defined: -"
		msg := err.Error()
		if given, ok := strings.CutPrefix(msg, undefined); ok {
			var names []string
			for _, f := range flags() {
				names = append(names, f.Names()...)
			}
			given = strings.TrimLeft(given, "-")
			if s := didyoumean.Closest(given, names); s != "" {
				return Usagef("%sunknown flag --%s: did you mean --%s? (%s --help lists the flags)", prefix, given, s, line)
			}
			return Usagef("%sunknown flag --%s (%s --help lists the flags)", prefix, given, line)
		}
		return UsageError{err}
	}
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
		given := c.Args().First()
		if s := didyoumean.Closest(given, names); s != "" {
			return Usagef("unknown command %q: did you mean %q? The commands of %s %sare: %s (%s %shelp COMMAND)",
				given, s, name, parent, strings.Join(names, ", "), name, parent)
		}
		return Usagef("unknown command %q; the commands of %s %sare: %s (%s %shelp COMMAND)",
			given, name, parent, strings.Join(names, ", "), name, parent)
	}
}
