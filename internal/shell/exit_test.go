package shell_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
)

func TestExitCode(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want int
	}{
		{"OK", nil, 0},
		{"Failure", errors.New("invalid signature"), shell.ExitFailure},
		{"Usage", shell.Usagef("--x %q: bad", "y"), shell.ExitUsage},
		{"UsageWrapped", fmt.Errorf("serve: %w", shell.Usagef("bad")), shell.ExitUsage},
		{"CliExit", cli.Exit("x", 3), 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := shell.ExitCode(tt.err); got != tt.want {
				t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

// testApp is a command with a subcommand group, set up as both commands are.
func testApp(stdout *bytes.Buffer) *cli.App {
	app := &cli.App{
		Name:   "tool",
		Writer: stdout, ErrWriter: stdout,
		Commands: []*cli.Command{
			{Name: "run", Flags: []cli.Flag{&cli.IntFlag{Name: "n"}}, Action: func(c *cli.Context) error {
				if c.Int("n") < 0 {
					return errors.New("run: failed")
				}
				return nil
			}},
			{Name: "group", Subcommands: []*cli.Command{{Name: "sub", Action: func(*cli.Context) error { return nil }}}},
		},
	}
	shell.Setup(app)
	return app
}

func TestMainExit(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		code     int
		stderr   string // what the error line holds
		stdoutRE string // what the output holds
	}{
		{[]string{"run"}, 0, "", ""},
		{[]string{"run", "-n", "-1"}, shell.ExitFailure, "tool: run: failed", ""},
		{[]string{"run", "--n", "x"}, shell.ExitUsage, "tool: invalid value", ""},
		{[]string{"run", "--nope"}, shell.ExitUsage, "tool: run: unknown flag --nope (tool run --help lists the flags)", ""},
		{[]string{"nope"}, shell.ExitUsage, `tool: unknown command "nope"; the commands of tool are: run, group (tool help COMMAND)`, ""},
		{[]string{"group", "nope"}, shell.ExitUsage, `tool: unknown command "nope"; the commands of tool group are: sub (tool group help COMMAND)`, ""},
		{[]string{"group"}, 0, "", "sub"},
	} {
		t.Run(strings.Join(tt.args, "_"), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := shell.Main(testApp(&out), append([]string{"tool"}, tt.args...), &errOut)
			if code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.code, errOut.String())
			}
			if tt.stderr == "" && errOut.Len() > 0 || !strings.Contains(errOut.String(), tt.stderr) {
				t.Errorf("stderr %q, want %q", errOut.String(), tt.stderr)
			}
			if !strings.Contains(out.String(), tt.stdoutRE) {
				t.Errorf("stdout %q, want it to hold %q", out.String(), tt.stdoutRE)
			}
		})
	}
}
