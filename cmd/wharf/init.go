package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/publish"
)

func initCommand() *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "write a commented wharf.toml for the artifacts of a build's output (or the built-in list)",
		ArgsUsage: "[INPUT_DIR]",
		Description: `Writes the release contents publish --config reads, every key explained:
an artifact for every name found in INPUT_DIR's file names (BINARY-OS-PLATFORM,
BINARY-OS-PLATFORM.tar.gz, IMAGE-PLATFORM.tar), with the built-in settings of
a built-in name and the defaults otherwise (binaries basic, images full; the
executable of a ready archive is the one executable at its top). Without
INPUT_DIR, the built-in list. Refuses to overwrite --out unless --force.
Then wharf check --config wharf.toml INPUT_DIR checks a build against it.

Examples:
   wharf init ./dist                 # wharf.toml for what ./dist holds
   wharf init --out release.toml     # the built-in list, to edit`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Value: "wharf.toml", Usage: "config `FILE` to write (- for standard output)", EnvVars: []string{"WHARF_INIT_OUT"}},
			&cli.BoolFlag{Name: "force", Usage: "overwrite an existing --out", EnvVars: []string{"WHARF_INIT_FORCE"}},
		},
		Action: initAction,
	}
}

func initAction(c *cli.Context) error {
	if c.NArg() > 1 {
		return shell.Usagef("init: want at most one INPUT_DIR (see wharf init --help)")
	}
	dir := c.Args().First()
	var (
		found   []publish.Found
		unknown []string
	)
	if dir == "" {
		for _, a := range publish.DefaultArtifacts() {
			found = append(found, publish.Found{Spec: a})
		}
	} else {
		var err error
		found, unknown, err = publish.DiscoverConfig(dir)
		if err != nil {
			return shell.Usagef("init: %w", err)
		}
		if len(found) == 0 {
			return fmt.Errorf("init: no file of %s is named like an artifact (BINARY-OS-PLATFORM, BINARY-OS-PLATFORM.tar.gz or IMAGE-PLATFORM.tar; OS linux or macos, PLATFORM amd64 or arm64)", dir)
		}
	}
	body := publish.ConfigTOML(found, dir, unknown)
	// What is written must be what publish reads.
	if _, err := publish.ParseConfig(bytes.NewReader(body)); err != nil {
		return fmt.Errorf("init: the config made for %s does not parse: %w", dir, err)
	}
	out := c.String("out")
	if out == "-" {
		_, err := c.App.Writer.Write(body)
		return err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if c.Bool("force") {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(out, flags, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return shell.Usagef("init: %s exists; --force overwrites it", out)
	}
	if err != nil {
		return shell.Usagef("init: %w", err)
	}
	_, err = f.Write(body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return shell.Usagef("init: %w", err)
	}
	fmt.Fprintf(c.App.Writer, "wrote %s: %d artifacts", out, len(found))
	if len(unknown) > 0 {
		fmt.Fprintf(c.App.Writer, " (%d files not recognised, listed in it)", len(unknown))
	}
	fmt.Fprintln(c.App.Writer)
	if dir != "" {
		fmt.Fprintf(c.App.Writer, "check a build against it: wharf check --config %s %s\n", out, dir)
	}
	return nil
}
