package main

import (
	"bytes"
	"crypto/ecdsa"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/publish"
)

// Exit codes of wharf verify: 0 a valid signature, 1 an invalid one (or
// a signature file that is not one), 2 usage or I/O errors (a file, the
// key or the signature cannot be read; the key is not a P-256 PEM).

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "check a download's signature, a channel record or a whole tree against dl.pub; exit 0 only if valid",
		ArgsUsage: "FILE [SIG] | CHANNEL | TREE_DIR",
		Description: `SIG is the detached signature (base64 of an ASN.1 DER ECDSA P-256
signature over the SHA-256 of FILE), by default FILE.sig. The same check
as: openssl dgst -sha256 -verify dl.pub -signature <(base64 -d FILE.sig) FILE

A channel record (a file starting "wharf-channel 1") carries its own
signature on its last line; it is checked, and refused once expired.
A directory is a published tree: its channel record, releases.json
against releases.json.sig, and that the versions the record names are
published.

Exit status: 0 a valid signature, 1 an invalid one, 2 usage or I/O errors
(a file, the signature or the key cannot be read).

A SIG that was base64-decoded already (the DER bytes, as openssl's
-signature takes them) is accepted too, and the output says so.

Example:
   curl -fsSLO https://dl.example.com/bin/26.1.2/treasury-cli-26.1.2-linux-amd64.tar.gz
   curl -fsSL -o treasury-cli-26.1.2-linux-amd64.tar.gz.sig \
       https://dl.example.com/bin/26.1.2/treasury-cli-26.1.2-linux-amd64.tar.gz/sig
   wharf verify --key dl.pub treasury-cli-26.1.2-linux-amd64.tar.gz
   curl -fsSLO https://dl.example.com/channel && wharf verify --key dl.pub channel
   wharf verify --key dl.pub ./public`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "key", Value: "dl.pub", Usage: "public key `FILE` (PEM)", EnvVars: []string{"WHARF_VERIFY_KEY"}},
		},
		Action: verify,
	}
}

func verify(c *cli.Context) error {
	if c.NArg() < 1 || c.NArg() > 2 {
		return shell.Usagef("verify: want FILE [SIG] (see wharf verify --help)")
	}
	file := c.Args().Get(0)
	sigFile := c.Args().Get(1)
	if sigFile == "" {
		sigFile = file + ".sig"
	}
	keyPEM, err := os.ReadFile(c.String("key"))
	if err != nil {
		return shell.Usagef("verify: public key: %w", err)
	}
	pub, err := publish.ParsePublicKeyPEM(keyPEM)
	if err != nil {
		return shell.Usagef("verify: public key %s: %w", c.String("key"), err)
	}
	if st, err := os.Stat(file); err == nil && st.IsDir() && c.NArg() == 1 {
		return verifyTree(c, pub, file)
	}
	if c.NArg() == 1 && isChannelRecord(file) {
		_, err := verifyChannelFile(c, pub, file)
		return err
	}
	sig, err := os.ReadFile(sigFile)
	if err != nil {
		return shell.Usagef("verify: signature: %w", err)
	}
	sig, decoded := sigText(sig)
	f, err := os.Open(file)
	if err != nil {
		return shell.Usagef("verify: %w", err)
	}
	defer f.Close()
	if err := publish.Verify(pub, f, sig); err != nil {
		if errors.Is(err, publish.ErrBadSignature) {
			return fmt.Errorf("verify %s: INVALID: %s is not a valid signature of this file under %s (%w)", file, sigFile, c.String("key"), err)
		}
		// A signature that is not base64 or DER is invalid too (above); a
		// file that cannot be read is an I/O error.
		return shell.Usagef("verify %s: %w", file, err)
	}
	if decoded {
		sigFile += ", DER: base64-decoded already"
	}
	fmt.Fprintf(c.App.Writer, "%s: signature OK (%s, key %s)\n", file, sigFile, c.String("key"))
	return nil
}

// sigText returns the .sig text of sig: sig itself, or the base64 of sig
// when it is DER (a signature already base64-decoded, for openssl) and
// decoded true. DER is told apart by its bytes: base64 text has no control
// characters, a DER ECDSA signature has them (30 45 02 21 ...).
func sigText(sig []byte) (text []byte, decoded bool) {
	if len(sig) > 8 && sig[0] == 0x30 && sig[2] == 0x02 {
		if _, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(sig))); err != nil {
			return []byte(base64.StdEncoding.EncodeToString(sig)), true
		}
	}
	return sig, false
}

// isChannelRecord reports whether the file starts as a channel record.
func isChannelRecord(file string) bool {
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len("wharf-channel "))
	n, _ := f.Read(head)
	return bytes.Equal(head[:n], []byte("wharf-channel "))
}

// verifyChannelFile checks a channel record's signature and expiry.
func verifyChannelFile(c *cli.Context, pub *ecdsa.PublicKey, file string) (publish.Channel, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return publish.Channel{}, shell.Usagef("verify: %w", err)
	}
	ch, err := publish.VerifyChannel(pub, b, time.Now())
	if err != nil {
		return ch, fmt.Errorf("verify %s: INVALID: %w", file, err)
	}
	expires := "no expiry"
	if !ch.Expires.IsZero() {
		expires = "expires " + ch.Expires.Format(time.RFC3339)
	}
	fmt.Fprintf(c.App.Writer, "%s: channel record OK (key %s): sequence %d, latest %s, preview %s, issued %s, %s, for %s\n",
		file, c.String("key"), ch.Sequence, orNone(ch.Latest), orNone(ch.Preview), ch.Issued.Format(time.RFC3339), expires, ch.URL)
	return ch, nil
}

// verifyTree checks a published tree: the channel record, releases.json
// and its signature, and that the record names published versions.
func verifyTree(c *cli.Context, pub *ecdsa.PublicKey, dir string) error {
	manifestFile := filepath.Join(dir, publish.KeyManifest)
	b, err := os.ReadFile(manifestFile)
	if err != nil {
		return shell.Usagef("verify: not a published tree: %w", err)
	}
	sig, err := os.ReadFile(manifestFile + ".sig")
	if err != nil {
		return shell.Usagef("verify: %w (published before wharf signed it: publish again to add it)", err)
	}
	if err := publish.Verify(pub, bytes.NewReader(b), sig); err != nil {
		return fmt.Errorf("verify %s: INVALID: %w", manifestFile, err)
	}
	m, err := publish.ReadManifest(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("verify %s: INVALID: %w", manifestFile, err)
	}
	fmt.Fprintf(c.App.Writer, "%s: signature OK (%d releases)\n", manifestFile, len(m.Releases))
	ch, err := verifyChannelFile(c, pub, filepath.Join(dir, publish.KeyChannel))
	if err != nil {
		return err
	}
	for _, v := range []string{ch.Latest, ch.Preview} {
		if _, ok := m.Find(v); v != "" && !ok {
			return fmt.Errorf("verify %s: INVALID: the channel record names %s, which %s does not list", dir, v, publish.KeyManifest)
		}
	}
	// A link is no file wharf published, and Caddy serves what it points to.
	if err := noSymlinks(dir); err != nil {
		return fmt.Errorf("verify %s: INVALID: %w", dir, err)
	}
	fmt.Fprintf(c.App.Writer, "%s: no symbolic link\n", dir)
	return nil
}
