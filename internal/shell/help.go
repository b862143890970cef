package shell

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"
)

// helpOnce puts back what a dependency changed in urfave/cli's globals.
// go-ethereum's internal/flags (imported by its node package, which
// addrd's dev chain needs) sets, in its init, cli.FlagStringer to geth's
// own multi-line layout (literal backticks, "value" placeholders, bool
// defaults) and files the help and version flags under a "MISC" heading.
// Both commands' help would depend on whether that package is linked in;
// with this they read alike whatever is.
var helpOnce sync.Once

func restoreHelp() {
	helpOnce.Do(func() {
		cli.FlagStringer = FlagString
		cli.HelpFlag = &cli.BoolFlag{Name: "help", Aliases: []string{"h"}, Usage: "show help", DisableDefaultText: true}
		cli.VersionFlag = &cli.BoolFlag{Name: "version", Aliases: []string{"v"}, Usage: "print the version", DisableDefaultText: true}
	})
}

// FlagString is the help line of a flag, as urfave/cli writes it by
// default: "--name PLACEHOLDER, -n PLACEHOLDER<TAB>usage (default: x)
// [$ENV]", the placeholder being the usage's `backquoted` word.
func FlagString(f cli.Flag) string {
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return ""
	}
	placeholder, usage := unquoteUsage(df.GetUsage())
	if df.TakesValue() && placeholder == "" {
		placeholder = "value"
	}
	def := ""
	if bf, ok := f.(*cli.BoolFlag); !ok || !bf.DisableDefaultText {
		if s := df.GetDefaultText(); s != "" {
			def = " (default: " + s + ")"
		}
	}
	var names []string
	for _, n := range df.Names() {
		if n == "" {
			continue
		}
		prefix := "--"
		if len(n) == 1 {
			prefix = "-"
		}
		if placeholder != "" {
			n += " " + placeholder
		}
		names = append(names, prefix+n)
	}
	pn := strings.Join(names, ", ")
	if sf, ok := f.(cli.DocGenerationSliceFlag); ok && sf.IsSliceFlag() {
		pn += " [ " + pn + " ]"
	}
	line := fmt.Sprintf("%s\t%s", pn, strings.TrimSpace(usage+def))
	if env := df.GetEnvVars(); len(env) > 0 {
		line += " [$" + strings.Join(env, ", $") + "]"
	}
	return line
}

// unquoteUsage returns the first `backquoted` word of usage, and usage
// without the backquotes.
func unquoteUsage(usage string) (placeholder, unquoted string) {
	i := strings.IndexByte(usage, '`')
	if i < 0 {
		return "", usage
	}
	j := strings.IndexByte(usage[i+1:], '`')
	if j < 0 {
		return "", usage
	}
	name := usage[i+1 : i+1+j]
	return name, usage[:i] + name + usage[i+1+j+1:]
}

// HelpPages renders the --help of an application and of each of its
// commands and subcommands, in order, with the version replaced by
// "VERSION" (it depends on the build): one text to compare with a golden
// file, so that a change to any help shows in review.
func HelpPages(newApp func(stdout, stderr io.Writer) *cli.App) (string, error) {
	var pages strings.Builder
	var walk func(path []string, cmds []*cli.Command) error
	page := func(path []string) error {
		var out bytes.Buffer
		app := newApp(&out, &out)
		app.Version = "VERSION"
		args := append(append([]string{app.Name}, path...), "--help")
		if err := app.Run(args); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(args, " "), err)
		}
		fmt.Fprintf(&pages, "$ %s\n%s\n", strings.Join(args, " "), out.String())
		return nil
	}
	walk = func(path []string, cmds []*cli.Command) error {
		for _, c := range cmds {
			if c.Hidden || c.Name == "help" {
				continue
			}
			p := append(slices.Clone(path), c.Name)
			if err := page(p); err != nil {
				return err
			}
			if err := walk(p, c.Subcommands); err != nil {
				return err
			}
		}
		return nil
	}
	if err := page(nil); err != nil {
		return "", err
	}
	if err := walk(nil, newApp(io.Discard, io.Discard).Commands); err != nil {
		return "", err
	}
	return pages.String(), nil
}
