package shell

import (
	"os"
	"strings"

	"github.com/urfave/cli/v2"
)

// flagsAnywhere wraps the action of cmd so that its flags may follow its
// arguments, as in `addrd apikey revoke ID --db X` (urfave/cli stops
// reading flags at the first argument): such a command line is run again
// with its flags first. Flags marked Required are checked afterwards, so
// that a flag after the arguments counts, and a missing one is a usage
// error naming it with the command's usage line, not the whole help.
func flagsAnywhere(cmd *cli.Command) {
	action := cmd.Action
	var required []cli.Flag
	for _, f := range cmd.Flags {
		if rf, ok := f.(cli.RequiredFlag); ok && rf.IsRequired() && unrequire(f) {
			required = append(required, f)
		}
	}
	cmd.Action = func(c *cli.Context) error {
		if args, ok := flagsFirst(c); ok {
			return rootApp(c).RunContext(c.Context, args)
		}
		for _, f := range required {
			name := f.Names()[0]
			missing := !c.IsSet(name)
			if _, ok := f.(*cli.StringFlag); ok {
				missing = c.String(name) == ""
			}
			if missing {
				return Usagef("%s: --%s is required; usage: %s (%s --help says more)",
					strings.Join(CommandPath(c), " "), name, usageLine(c), c.Command.HelpName)
			}
		}
		return action(c)
	}
}

// unrequire clears the Required of the flag kinds the commands use, and
// reports whether it could.
func unrequire(f cli.Flag) bool {
	switch f := f.(type) {
	case *cli.StringFlag:
		f.Required = false
	case *cli.StringSliceFlag:
		f.Required = false
	case *cli.IntFlag:
		f.Required = false
	case *cli.Int64Flag:
		f.Required = false
	case *cli.Uint64Flag:
		f.Required = false
	case *cli.DurationFlag:
		f.Required = false
	case *cli.BoolFlag:
		f.Required = false
	default:
		return false
	}
	return true
}

// usageLine is the USAGE line of c's command, as its help shows it.
func usageLine(c *cli.Context) string {
	if u := c.Command.UsageText; u != "" {
		return u
	}
	line := c.Command.HelpName + " [command options]"
	if a := c.Command.ArgsUsage; a != "" {
		line += " " + a
	}
	return line
}

// flagsFirst returns the command line of c with the flags among its
// arguments moved before them, and whether there were any.
func flagsFirst(c *cli.Context) ([]string, bool) {
	bools := map[string]bool{"help": true, "h": true}
	for _, f := range c.Command.Flags {
		if _, ok := f.(*cli.BoolFlag); ok {
			for _, n := range f.Names() {
				bools[n] = true
			}
		}
	}
	args := c.Args().Slice()
	if len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' {
		// Only a "--" before it keeps a flag-like first argument from
		// being read as a flag: all of them are arguments.
		return nil, false
	}
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if !strings.Contains(name, "=") && !bools[name] && i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	if len(flags) == 0 {
		return nil, false
	}
	line := append([]string{rootApp(c).Name}, CommandPath(c)...)
	// The flags already parsed, as given, then the moved ones.
	for _, f := range c.Command.Flags {
		name := f.Names()[0]
		if !c.IsSet(name) || fromEnv(c, name) {
			continue
		}
		if _, ok := f.(*cli.StringSliceFlag); ok {
			for _, v := range c.StringSlice(name) {
				line = append(line, "--"+name+"="+v)
			}
			continue
		}
		line = append(line, "--"+name+"="+c.String(name))
	}
	line = append(line, flags...)
	return append(line, pos...), true
}

// CommandPath is the names of the commands from the root to c, e.g.
// ["org", "create"].
func CommandPath(c *cli.Context) []string {
	var names []string
	root := rootApp(c).Name
	for _, ctx := range c.Lineage() {
		if ctx.Command != nil && ctx.Command.Name != "" && ctx.Command.Name != root {
			names = append([]string{ctx.Command.Name}, names...)
		}
	}
	return names
}

// rootApp is the application a subcommand's context belongs to (its own
// App is one made for the subcommand's parent).
func rootApp(c *cli.Context) *cli.App {
	app := c.App
	for _, ctx := range c.Lineage() {
		if ctx.App != nil {
			app = ctx.App
		}
	}
	return app
}

// fromEnv reports whether a flag's value came from its environment
// variable rather than the command line.
func fromEnv(c *cli.Context, name string) bool {
	for _, f := range c.Command.Flags {
		if !hasName(f, name) {
			continue
		}
		if ev, ok := f.(interface{ GetEnvVars() []string }); ok {
			for _, e := range ev.GetEnvVars() {
				if _, set := os.LookupEnv(e); set {
					return true
				}
			}
		}
	}
	return false
}
