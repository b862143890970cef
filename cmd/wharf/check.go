package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/publish"
)

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "check a config and a build's output as publish would, and deeper, without publishing",
		ArgsUsage: "INPUT_DIR",
		Description: `Reads the config (--config, or the built-in list) and INPUT_DIR and lists
every problem at once: config keys and values; file names matching no
artifact; artifacts without their files; and what the files hold: a raw
executable must be an ELF for its Linux platform, a Mach-O for macOS or a
#! script; a ready .tar.gz must hold the configured executable at its top
(where the install script takes it), executable and of the right format;
an image .tar must be a docker save of one linux image of its platform.
Exits 0 when publish would take the directory, 1 with the problems
otherwise. Needs no key, store or network. The build's provenance (GitHub
Actions' environment, or the --builder-id and --source-* flags) is checked
as publish would write it.

Examples:
   wharf check ./dist
   wharf check --config wharf.toml ./dist`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "config", Usage: "release contents `FILE` (wharf.toml); default: the built-in artifacts", EnvVars: []string{"WHARF_CONFIG"}},
		}, provenanceFlags()...),
		Action: checkAction,
	}
}

func checkAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return shell.Usagef("check: want one INPUT_DIR (see wharf check --help)")
	}
	dir := c.Args().First()
	cfg, problems, err := checkConfig(c.String("config"))
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	inputs, found, err := cfg.CheckInput(dir)
	if err != nil {
		return shell.Usagef("check: %w", err)
	}
	problems = append(problems, found...)
	if err := provenanceFrom(c).Validate(); err != nil {
		problems = append(problems, strings.Split(err.Error(), "\n")...)
	}
	if len(problems) > 0 {
		return fmt.Errorf("check: %d problems in %s:\n  %s", len(problems), dir, strings.Join(problems, "\n  "))
	}
	fmt.Fprintf(c.App.Writer, "ok: %d files for %d artifacts in %s; publish would take them\n", len(inputs), len(cfg.Artifacts), dir)
	return nil
}

// checkConfig reads the config at path (none: the built-in one) and
// returns every problem of it, each naming the file, and the artifacts
// without a problem of their own to check the input against.
func checkConfig(path string) (*publish.Config, []string, error) {
	if path == "" {
		return publish.DefaultConfig(), nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	cfg, errs, err := publish.CheckConfig(f)
	if err != nil {
		return nil, nil, fmt.Errorf("config %s: %w", path, err)
	}
	problems := make([]string, len(errs))
	for i, e := range errs {
		problems[i] = "config " + path + ": " + e.Error()
	}
	return cfg, problems, nil
}
