package shell

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/buildinfo"
)

// NewApp builds a binary's CLI: its commands, printing to stdout and
// stderr (tests run commands in-process and read what they print), its
// version from the build, with Setup's behaviour.
func NewApp(name, usage string, stdout, stderr io.Writer, cmds ...*cli.Command) *cli.App {
	app := &cli.App{
		Name:      name,
		Usage:     usage,
		Version:   buildinfo.Read().String(),
		Writer:    stdout,
		ErrWriter: stderr,
		Commands:  cmds,
	}
	Setup(app)
	return app
}
