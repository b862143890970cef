package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/oci"
)

// Exit codes of wharf verify: 0 a valid signature, 1 an invalid one (or
// a signature file that is not one), 2 usage or I/O errors (a file, the
// key or the signature cannot be read; the key is not a P-256 PEM).

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "check a download's signature, a channel record, a SHA256SUMS or releases.json, or a whole tree against dl.pub; exit 0 only if valid",
		ArgsUsage: "FILE [SIG] | CHANNEL | TREE_DIR",
		Description: `SIG is the detached signature (base64 of an ASN.1 DER ECDSA P-256
signature over the SHA-256 of FILE), by default FILE.sig. For a download
it is the same check as:
   openssl dgst -sha256 -verify dl.pub -signature <(base64 -d FILE.sig) FILE

A SHA256SUMS or a releases.json is signed as metadata, over a context
that names what it is and the URL it is published at: give that URL with
--url (a file of that name without --url is refused). A file that starts
as that context does ("DSSEv1") is never a download, and is refused as
one.

A channel record (a file starting "wharf-channel ") carries its own
signature on its last line, in the context of the URL it names; it is
checked, and refused once expired or without an expiry.
A directory, or s3://bucket/prefix (with --s3-endpoint and the AWS_*
credentials, as for publish), is a published tree: its channel record,
releases.json and every SHA256SUMS against their signatures (each in the
context of the URL the record names), and that the versions the record
names are published, and every attestation releases.json lists: the
SHA-256 it lists, signed by the key, about its artifact's name and SHA-256.

Exit status: 0 a valid signature, 1 an invalid one, 2 usage or I/O errors
(a file, the signature or the key cannot be read).

A download's attestations beside it (FILE.provenance.intoto.jsonl, its SLSA
provenance; FILE.sbom.intoto.jsonl, its CycloneDX SBOM) are checked too:
signed by the key, in a DSSE envelope, and about this file's name and
SHA-256. Each is named with what it says (the builder, the source commit).

A SIG that was base64-decoded already (the DER bytes, as openssl's
-signature takes them) is accepted too, and the output says so.

Example:
   curl -fsSLO https://dl.example.com/bin/26.1.2/treasury-cli-26.1.2-linux-amd64.tar.gz
   curl -fsSL -o treasury-cli-26.1.2-linux-amd64.tar.gz.sig \
       https://dl.example.com/bin/26.1.2/treasury-cli-26.1.2-linux-amd64.tar.gz/sig
   wharf verify --key dl.pub treasury-cli-26.1.2-linux-amd64.tar.gz
   curl -fsSLO https://dl.example.com/bin/26.1.2/SHA256SUMS
   curl -fsSLO https://dl.example.com/bin/26.1.2/SHA256SUMS.sig
   wharf verify --key dl.pub --url https://dl.example.com/bin/26.1.2/SHA256SUMS SHA256SUMS
   curl -fsSLO https://dl.example.com/channel && wharf verify --key dl.pub channel
   wharf verify --key dl.pub ./public
   wharf verify --key dl.pub --s3-endpoint http://127.0.0.1:9000 s3://releases/dl`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "key", Value: "dl.pub", Usage: "public key `FILE` (PEM)", EnvVars: []string{"WHARF_VERIFY_KEY"}},
			&cli.StringFlag{Name: "url", Usage: "the `URL` a SHA256SUMS or releases.json was downloaded from, which its signature names", EnvVars: []string{"WHARF_VERIFY_URL"}},
			&cli.StringFlag{Name: "s3-endpoint", Usage: "S3 API `ENDPOINT` of a tree in s3://bucket/prefix, as for publish", EnvVars: []string{"WHARF_S3_ENDPOINT"}},
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
	if st, err := os.Stat(file); (err == nil && st.IsDir() || strings.HasPrefix(file, "s3://")) && c.NArg() == 1 {
		return verifyTree(c, pub, file)
	}
	if c.String("s3-endpoint") != "" {
		return shell.Usagef("verify: --s3-endpoint is for a tree in s3://bucket/prefix")
	}
	if c.NArg() == 1 && isChannelRecord(file) {
		_, err := verifyChannelFile(c, pub, file)
		return err
	}
	if kind := metadataKind(c.String("url"), file); kind != "" {
		return verifyMetadataFile(c, pub, kind, file, sigFile)
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
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	if publish.IsSignContext(head[:n]) {
		return fmt.Errorf("verify %s: INVALID: it starts as the context wharf signs metadata in, which no download does", file)
	}
	if oci.LooksLikeJSON(head[:n]) {
		return fmt.Errorf("verify %s: INVALID: it starts as a JSON object, as an image signature's payload does, which no download does (cosign verify checks images)", file)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return shell.Usagef("verify %s: %w", file, err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return shell.Usagef("verify %s: %w", file, err)
	}
	digest := h.Sum(nil)
	if err := publish.VerifyDigest(pub, digest, sig); err != nil {
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
	return verifyAttestations(c, pub, file, hex.EncodeToString(digest))
}

// metadataKind is the kind of metadata a file is, by the last element of
// the URL it was downloaded from, else by its own name; "" for a
// download.
func metadataKind(url, file string) string {
	name := filepath.Base(file)
	if url != "" {
		name = path.Base(url)
	}
	switch name {
	case "SHA256SUMS":
		return publish.SignedSums
	case publish.KeyManifest:
		return publish.SignedManifest
	}
	return ""
}

// verifyMetadataFile checks a SHA256SUMS or releases.json against its
// signature in the context of the URL it was downloaded from.
func verifyMetadataFile(c *cli.Context, pub *ecdsa.PublicKey, kind, file, sigFile string) error {
	url := c.String("url")
	if url == "" {
		return shell.Usagef("verify %s: its signature names the URL it is published at: give it with --url (e.g. --url https://dl.example.com/bin/26.1.2/SHA256SUMS)", file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return shell.Usagef("verify: %w", err)
	}
	sig, err := os.ReadFile(sigFile)
	if err != nil {
		return shell.Usagef("verify: signature: %w", err)
	}
	sig, decoded := sigText(sig)
	if err := publish.VerifyMetadataAny(pub, kind, url, b, sig); err != nil {
		return fmt.Errorf("verify %s: INVALID: %s is not a valid signature of this file as the %s at %s under %s (%w)", file, sigFile, kind, url, c.String("key"), err)
	}
	what := ""
	if kind == publish.SignedSums {
		entries, err := publish.ParseSums(b)
		if err != nil {
			return fmt.Errorf("verify %s: INVALID: %w", file, err)
		}
		what = fmt.Sprintf(", %d files", len(entries))
	}
	if decoded {
		sigFile += ", DER: base64-decoded already"
	}
	fmt.Fprintf(c.App.Writer, "%s: signature OK as the %s at %s (%s, key %s%s)\n", file, kind, url, sigFile, c.String("key"), what)
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
	return verifyChannel(c, pub, file, b)
}

// verifyChannel checks the channel record b, read from file.
func verifyChannel(c *cli.Context, pub *ecdsa.PublicKey, file string, b []byte) (publish.Channel, error) {
	ch, err := publish.VerifyChannel(pub, b, time.Now())
	if err != nil {
		return ch, fmt.Errorf("verify %s: INVALID: %w", file, err)
	}
	fmt.Fprintf(c.App.Writer, "%s: channel record OK (key %s): sequence %d, latest %s, preview %s, issued %s, expires %s, for %s\n",
		file, c.String("key"), ch.Sequence, orNone(ch.Latest), orNone(ch.Preview), ch.Issued.Format(time.RFC3339), ch.Expires.Format(time.RFC3339), ch.URL)
	return ch, nil
}

// treeReader reads the objects of a published tree in any store publish
// writes to, naming them as the output does: a path in a directory,
// store/key in a bucket.
type treeReader struct {
	c     *cli.Context
	store string
	st    publish.Store
}

func (t treeReader) name(key string) string {
	if strings.HasPrefix(t.store, "s3://") {
		return strings.TrimSuffix(t.store, "/") + "/" + key
	}
	return filepath.Join(t.store, filepath.FromSlash(key))
}

func (t treeReader) read(key string) ([]byte, error) {
	o, err := t.st.Open(t.c.Context, key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.name(key), err)
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.name(key), err)
	}
	return b, nil
}

// verifyTree checks a published tree in a directory or s3://bucket/prefix
// (read through the store publish and serve open): the channel record,
// releases.json and every SHA256SUMS against their signatures in the
// context of the URL the record names, and that the record names
// published versions.
func verifyTree(c *cli.Context, pub *ecdsa.PublicKey, store string) error {
	st, closeStore, err := openStore(c.Context, store, storeOptions{S3Endpoint: c.String("s3-endpoint"), Serve: true})
	if err != nil {
		return shell.Usagef("verify: %w", err)
	}
	defer closeStore()
	t := treeReader{c: c, store: store, st: st}
	manifestFile := t.name(publish.KeyManifest)
	b, err := t.read(publish.KeyManifest)
	if err != nil {
		return shell.Usagef("verify: not a published tree: %w", err)
	}
	rec, err := t.read(publish.KeyChannel)
	if err != nil {
		return shell.Usagef("verify: %w", err)
	}
	ch, err := verifyChannel(c, pub, t.name(publish.KeyChannel), rec)
	if err != nil {
		return err
	}
	sig, err := t.read(publish.KeyManifest + ".sig")
	if err != nil {
		return shell.Usagef("verify: %w (published before wharf signed it: run wharf channel resign to add it)", err)
	}
	if err := publish.VerifyMetadataAny(pub, publish.SignedManifest, ch.URL+"/"+publish.KeyManifest, b, sig); err != nil {
		return fmt.Errorf("verify %s: INVALID: %w (a tree published by an earlier wharf: wharf channel resign signs it again)", manifestFile, err)
	}
	m, err := publish.ReadManifest(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("verify %s: INVALID: %w", manifestFile, err)
	}
	fmt.Fprintf(c.App.Writer, "%s: signature OK (%d releases)\n", manifestFile, len(m.Releases))
	sums := 0
	for _, rel := range m.Releases {
		v, err := publish.ParseVersion(rel.Version)
		if err != nil {
			return fmt.Errorf("verify %s: INVALID: %w", manifestFile, err)
		}
		kinds := map[string]bool{}
		for _, a := range rel.Artifacts {
			kinds[a.Kind] = true
		}
		for _, kind := range []string{publish.KindBinary, publish.KindImage} {
			if !kinds[kind] {
				continue
			}
			key := publish.SumsKey(kind, v)
			if err := verifyTreeSums(pub, t, ch.URL, key, rel); err != nil {
				return err
			}
			sums++
		}
	}
	fmt.Fprintf(c.App.Writer, "%s: %d SHA256SUMS OK, each listing its release's files\n", store, sums)
	atts, err := verifyTreeAttestations(pub, t, m)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "%s: %d provenance and %d SBOM attestations OK, each as %s lists it, signed by the key and about its artifact's name and SHA-256\n",
		store, atts[publish.PredicateSLSA], atts[publish.PredicateCycloneDX], publish.KeyManifest)
	imgAtts, err := verifyTreeImageAttestations(pub, t, m)
	if err != nil {
		return err
	}
	if len(imgAtts) > 0 {
		fmt.Fprintf(c.App.Writer, "%s: %d provenance and %d SBOM attestations of images OK, at sha256-HEX.att of each digest they are about as %s lists them, signed by the key\n",
			store, imgAtts[publish.PredicateSLSA], imgAtts[publish.PredicateCycloneDX], publish.KeyManifest)
	}
	for _, v := range []string{ch.Latest, ch.Preview} {
		if _, ok := m.Find(v); v != "" && !ok {
			return fmt.Errorf("verify %s: INVALID: the channel record names %s, which %s does not list", store, v, publish.KeyManifest)
		}
	}
	if strings.HasPrefix(store, "s3://") {
		return nil // a bucket has no links
	}
	// A link is no file wharf published, and Caddy serves what it points to.
	if err := noSymlinks(store); err != nil {
		return fmt.Errorf("verify %s: INVALID: %w", store, err)
	}
	fmt.Fprintf(c.App.Writer, "%s: no symbolic link\n", store)
	return nil
}

// verifyTreeSums checks one SHA256SUMS of a tree: its signature, its
// form, and that it lists the release's files of its kind as the manifest
// does.
func verifyTreeSums(pub *ecdsa.PublicKey, t treeReader, baseURL, key string, rel publish.Release) error {
	file := t.name(key)
	b, err := t.read(key)
	if err != nil {
		return shell.Usagef("verify: %w", err)
	}
	sig, err := t.read(key + ".sig")
	if err != nil {
		return shell.Usagef("verify: %w", err)
	}
	if err := publish.VerifyMetadataAny(pub, publish.SignedSums, baseURL+"/"+key, b, sig); err != nil {
		return fmt.Errorf("verify %s: INVALID: %w (a tree published by an earlier wharf: wharf channel resign signs it again)", file, err)
	}
	entries, err := publish.ParseSums(b)
	if err != nil {
		return fmt.Errorf("verify %s: INVALID: %w", file, err)
	}
	listed := map[string]string{}
	for _, e := range entries {
		listed[e.Name] = e.SHA256
	}
	dirOf := path.Dir(key)
	n := 0
	for _, a := range rel.Artifacts {
		if path.Dir(a.Key) != dirOf {
			continue
		}
		n++
		if listed[a.FileName()] != a.SHA256 {
			return fmt.Errorf("verify %s: INVALID: it lists %s with sha256 %q, %s says %s", file, a.FileName(), listed[a.FileName()], publish.KeyManifest, a.SHA256)
		}
	}
	if n != len(entries) {
		return fmt.Errorf("verify %s: INVALID: it lists %d files, %s %d", file, len(entries), publish.KeyManifest, n)
	}
	return nil
}
