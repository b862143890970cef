package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/publish"
)

func keygenCommand() *cli.Command {
	return &cli.Command{
		Name:  "keygen",
		Usage: "make a P-256 signing key (PEM, mode 0600) and its public key dl.pub beside it",
		Description: `Writes the private key to --out and the public key, PKIX PEM, to --pub
(default: --out with .key replaced by .pub). Refuses to overwrite either
file unless --force is given. Keep the private key secret (a CI secret);
publish hands out dl.pub with every release.

Example:
   wharf keygen --out dl.key    # writes dl.key and dl.pub`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Value: "dl.key", Usage: "private key `FILE`", EnvVars: []string{"WHARF_KEYGEN_OUT"}},
			&cli.StringFlag{Name: "pub", Usage: "public key `FILE` (default: --out with .pub for .key)", EnvVars: []string{"WHARF_KEYGEN_PUB"}},
			&cli.BoolFlag{Name: "force", Usage: "overwrite existing key files", EnvVars: []string{"WHARF_KEYGEN_FORCE"}},
		},
		Action: keygen,
	}
}

func keygen(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("keygen: unexpected argument %q (the key file is --out)", c.Args().First())
	}
	out := c.String("out")
	pub := c.String("pub")
	if pub == "" {
		pub = strings.TrimSuffix(out, ".key") + ".pub"
	}
	if filepath.Clean(pub) == filepath.Clean(out) {
		return fmt.Errorf("keygen: --pub and --out are the same file %s", out)
	}
	privPEM, pubPEM, err := publish.GenerateKey()
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if c.Bool("force") {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	if err := writeFile(out, privPEM, flags, 0o600); err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	if err := writeFile(pub, pubPEM, flags, 0o644); err != nil {
		os.Remove(out)
		return fmt.Errorf("keygen: %w", err)
	}
	fmt.Fprintf(c.App.Writer, "wrote private key %s (keep it secret) and public key %s\n", out, pub)
	return nil
}

func writeFile(name string, b []byte, flags int, perm os.FileMode) error {
	f, err := os.OpenFile(name, flags, perm)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists; not overwriting a key (use --force, or another --out)", name)
	}
	if err != nil {
		return err
	}
	// An existing file opened with --force keeps its mode; a private key
	// must not stay readable by others.
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
