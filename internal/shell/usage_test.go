package shell_test

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
)

// toyApp is an application with a group of two commands, one with a
// required flag, each recording what it was run with.
func toyApp(out *bytes.Buffer, got *[]string) *cli.App {
	record := func(c *cli.Context) error {
		*got = append(*got, strings.Join(append([]string{"db=" + c.String("db"), "name=" + c.String("name")}, c.Args().Slice()...), " "))
		return nil
	}
	return shell.NewApp("toy", "a test application", out, out, &cli.Command{
		Name: "key",
		Subcommands: []*cli.Command{
			{Name: "create", UsageText: "toy key create --name NAME [--db DB]", Action: record, Flags: []cli.Flag{
				&cli.StringFlag{Name: "name", Required: true},
				&cli.StringFlag{Name: "db", Value: "toy.db"},
			}},
			{Name: "revoke", ArgsUsage: "ID", Action: record, Flags: []cli.Flag{
				&cli.StringFlag{Name: "db", Value: "toy.db"},
				&cli.BoolFlag{Name: "force"},
			}},
		},
	})
}

func TestSetup(t *testing.T) {
	tests := []struct {
		name string
		args []string
		ran  string // what the command was run with
		err  string // or the error
	}{
		{"FlagsAfterArgument", []string{"key", "revoke", "k1", "--db", "x.db"}, "db=x.db name= k1", ""},
		{"BoolFlagAfterArgument", []string{"key", "revoke", "k1", "--force", "k2"}, "db=toy.db name= k1 k2", ""},
		{"FlagsBothSides", []string{"key", "revoke", "--db=y.db", "k1", "--force"}, "db=y.db name= k1", ""},
		{"AfterDoubleDash", []string{"key", "revoke", "--", "--db"}, "db=toy.db name= --db", ""},
		{"RequiredAfterArgument", []string{"key", "create", "extra", "--name", "n"}, "db=toy.db name=n extra", ""},
		{"ErrRequiredMissing", []string{"key", "create", "--db", "x.db"}, "",
			"key create: --name is required; usage: toy key create --name NAME [--db DB] (toy key create --help says more)"},
		{"ErrRequiredEmpty", []string{"key", "create", "--name="}, "", "key create: --name is required"},
		{"ErrFlagTypo", []string{"key", "revoke", "--dbb", "x", "k1"}, "",
			"key revoke: unknown flag --dbb: did you mean --db? (toy key revoke --help lists the flags)"},
		{"ErrFlagUnlike", []string{"key", "revoke", "--zzzzzz", "k1"}, "",
			"key revoke: unknown flag --zzzzzz (toy key revoke --help lists the flags)"},
		{"ErrCommandTypo", []string{"key", "revok"}, "",
			`unknown command "revok": did you mean "revoke"? The commands of toy key are: create, revoke (toy key help COMMAND)`},
		{"ErrCommandUnlike", []string{"kex"}, "", `unknown command "kex": did you mean "key"?`},
		{"ErrCommandFar", []string{"publish"}, "", `unknown command "publish"; the commands of toy are: key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			var ran []string
			err := toyApp(&out, &ran).Run(append([]string{"toy"}, tt.args...))
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) || shell.ExitCode(err) != shell.ExitUsage {
					t.Errorf("err = %v (exit %d), want %q, exit 2", err, shell.ExitCode(err), tt.err)
				}
				if out.Len() != 0 {
					t.Errorf("printed %q besides the error, want nothing (not the help)", out.String())
				}
				return
			}
			if err != nil || len(ran) != 1 || ran[0] != tt.ran {
				t.Errorf("ran %q, err %v; want %q once", ran, err, tt.ran)
			}
		})
	}
}

// TestGroupUsage: a group's USAGE says a command follows it.
func TestGroupUsage(t *testing.T) {
	var out bytes.Buffer
	var ran []string
	if err := toyApp(&out, &ran).Run([]string{"toy", "key", "--help"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "USAGE:\n   toy key command [command options]\n") {
		t.Errorf("toy key --help:\n%s", out.String())
	}
}

// TestListen: a taken address is the bind error and how to choose
// another, by the flag and its environment variable.
func TestListen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var out bytes.Buffer
	app := shell.NewApp("toy", "", &out, &out, &cli.Command{
		Name:  "serve",
		Flags: []cli.Flag{&cli.StringFlag{Name: "listen", EnvVars: []string{"TOY_LISTEN"}}},
		Action: func(c *cli.Context) error {
			l, err := shell.Listen(c, "listen")
			if err == nil {
				l.Close()
			}
			return err
		},
	})
	err = app.Run([]string{"toy", "serve", "--listen", ln.Addr().String()})
	want := "bind: address already in use: another server listens on " + ln.Addr().String() + "; stop it, or choose a free address with --listen ADDR or $TOY_LISTEN"
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("err = %v, want it to end %q", err, want)
	}
}
