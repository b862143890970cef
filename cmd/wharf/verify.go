package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/publish"
)

// Exit codes of wharf verify: 0 a valid signature, 1 an invalid one (or
// a signature file that is not one), 2 usage or I/O errors (a file, the
// key or the signature cannot be read; the key is not a P-256 PEM).

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "check a download's signature against dl.pub; exit 0 only if it is valid",
		ArgsUsage: "FILE [SIG]",
		Description: `SIG is the detached signature (base64 of an ASN.1 DER ECDSA P-256
signature over the SHA-256 of FILE), by default FILE.sig. The same check
as: openssl dgst -sha256 -verify dl.pub -signature <(base64 -d FILE.sig) FILE

Exit status: 0 a valid signature, 1 an invalid one, 2 usage or I/O errors
(a file, the signature or the key cannot be read).

A SIG that was base64-decoded already (the DER bytes, as openssl's
-signature takes them) is accepted too, and the output says so.

Example:
   curl -fsSLO https://dl.example.com/bin/26.1.2/treasury-cli-26.1.2-linux-amd64.tar.gz
   curl -fsSL -o treasury-cli-26.1.2-linux-amd64.tar.gz.sig \
       https://dl.example.com/bin/26.1.2/treasury-cli-26.1.2-linux-amd64.tar.gz/sig
   wharf verify --key dl.pub treasury-cli-26.1.2-linux-amd64.tar.gz`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "key", Value: "dl.pub", Usage: "public key `FILE` (PEM)", EnvVars: []string{"WHARF_VERIFY_KEY"}},
		},
		Action: verify,
	}
}

func verify(c *cli.Context) error {
	if c.NArg() < 1 || c.NArg() > 2 {
		return usageError{errors.New("verify: want FILE [SIG] (see wharf verify --help)")}
	}
	file := c.Args().Get(0)
	sigFile := c.Args().Get(1)
	if sigFile == "" {
		sigFile = file + ".sig"
	}
	keyPEM, err := os.ReadFile(c.String("key"))
	if err != nil {
		return usageError{fmt.Errorf("verify: public key: %w", err)}
	}
	pub, err := publish.ParsePublicKeyPEM(keyPEM)
	if err != nil {
		return usageError{fmt.Errorf("verify: public key %s: %w", c.String("key"), err)}
	}
	sig, err := os.ReadFile(sigFile)
	if err != nil {
		return usageError{fmt.Errorf("verify: signature: %w", err)}
	}
	sig, decoded := sigText(sig)
	f, err := os.Open(file)
	if err != nil {
		return usageError{fmt.Errorf("verify: %w", err)}
	}
	defer f.Close()
	if err := publish.Verify(pub, f, sig); err != nil {
		if errors.Is(err, publish.ErrBadSignature) {
			return fmt.Errorf("verify %s: INVALID: %s is not a valid signature of this file under %s (%w)", file, sigFile, c.String("key"), err)
		}
		// A signature that is not base64 or DER is invalid too (above); a
		// file that cannot be read is an I/O error.
		return usageError{fmt.Errorf("verify %s: %w", file, err)}
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
