package publish

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wharfhq/wharf/publish/oci"
)

// KeyChannel is the key of the signed channel record.
const KeyChannel = "channel"

// channelMagic is the first line of a channel record: the format and its
// version, so that a later format is refused rather than misread.
// Format 1 was signed bare, as an artifact is; it is read only for its
// sequence, which a new record carries on from, and never verified.
const (
	channelMagic   = "wharf-channel 2"
	channelMagicV1 = "wharf-channel 1"
)

// DefaultChannelExpiry is how long a channel record is valid when the
// vendor says nothing: long enough for a weekly or monthly re-sign job to
// miss a run, short enough that a mirror cannot hold a machine on an old
// release for a season.
const DefaultChannelExpiry = 30 * 24 * time.Hour

// MaxChannelExpiry is the longest validity a record may have: a vendor
// who does not want to re-sign chooses it on purpose. A record without
// an expiry is never written, and install scripts refuse one.
const MaxChannelExpiry = 10 * 365 * 24 * time.Hour

// maxChannelSize bounds a channel record; a real one is about 250 bytes.
const maxChannelSize = 4 << 10

// maxSequence keeps the sequence within what every shell compares
// exactly (dash, bash and busybox sh use 64-bit integers).
const maxSequence = 1e15

// Errors of ParseChannel and VerifyChannel; compare with errors.Is.
var (
	// ErrChannelMalformed: the bytes are not a channel record.
	ErrChannelMalformed = errors.New("malformed channel record")
	// ErrChannelExpired: the record's expiry has passed.
	ErrChannelExpired = errors.New("channel record expired")
)

// Channel is the signed channel record: which versions latest and preview
// name, signed with the release key so that a mirror or a proxy cannot
// answer an older release (rollback) or keep answering the same one for
// ever (freeze, bounded by Expires). It is one small text file, laid out
// so that a POSIX shell with sed, awk and openssl can check it:
//
//	wharf-channel 2
//	sequence 12
//	issued 1764151200 2026-11-26T10:00:00Z
//	expires 1764756000 2026-12-03T10:00:00Z
//	url https://dl.example.com
//	latest 26.1.2
//	preview 26.1.3-pre.4
//	image latest treasury-node sha256:4f1c...
//	image preview treasury-node sha256:9a0e...
//	signature MEUCIQ...
//
// The signature line is last; it is the base64 of the ASN.1 DER ECDSA
// P-256 signature over the SHA-256 of SignContext(PayloadType(
// SignedChannel, URL+"/channel"), every byte before it): a context that
// no artifact and no other metadata can be. Times are Unix seconds,
// followed by the same time in RFC 3339 for people. latest and preview
// are left out when there is none; expires is always there. Each image
// line names the digest of the image index of the release a pointer
// names (releases.json's), pointer then image name in order, so that a
// customer pins an image by a digest the key signed. The record is one object, so that it is replaced in one
// conditional write and no reader or cache ever pairs a record with the
// signature of another.
type Channel struct {
	// Sequence grows by one with every record written for the tree; an
	// install script refuses one lower than it has seen.
	Sequence uint64
	Issued   time.Time
	// Expires is when the record stops being valid; a record without one
	// is refused.
	Expires time.Time
	// URL is the download server the record is for, so that a record of
	// another tree signed with the same key (staging) is refused.
	URL     string
	Latest  string // a release version, "" when none is published
	Preview string // a preview version, "" when none is published
	// Images are the image indexes of the releases Latest and Preview
	// name, sorted by pointer (latest first) and name.
	Images []ChannelImage
}

// ChannelImage is one image line of a channel record.
type ChannelImage struct {
	Pointer string // KeyLatest or KeyPreview
	Name    string // the image repository, as in releases.json
	Index   string // sha256:HEX of its image index
}

// maxChannelImages bounds the image lines of a record (its size is
// bounded too).
const maxChannelImages = 32

// Body is the signed part of the record: every line but the signature.
func (c Channel) Body() []byte {
	var b bytes.Buffer
	b.WriteString(channelMagic + "\n")
	fmt.Fprintf(&b, "sequence %d\n", c.Sequence)
	fmt.Fprintf(&b, "issued %d %s\n", c.Issued.Unix(), c.Issued.UTC().Format(time.RFC3339))
	if !c.Expires.IsZero() {
		fmt.Fprintf(&b, "expires %d %s\n", c.Expires.Unix(), c.Expires.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, "url %s\n", c.URL)
	if c.Latest != "" {
		fmt.Fprintf(&b, "latest %s\n", c.Latest)
	}
	if c.Preview != "" {
		fmt.Fprintf(&b, "preview %s\n", c.Preview)
	}
	for _, im := range c.Images {
		fmt.Fprintf(&b, "image %s %s %s\n", im.Pointer, im.Name, im.Index)
	}
	return b.Bytes()
}

// Sign returns the whole record, signed by signer.
func (c Channel) Sign(ctx context.Context, signer Signer) ([]byte, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	body := c.Body()
	sig, err := SignMetadata(ctx, signer, SignedChannel, c.ObjectURL(), body)
	if err != nil {
		return nil, err
	}
	return append(append(body, "signature "...), append(sig, '\n')...), nil
}

// ObjectURL is where the record is published, which its signature names.
func (c Channel) ObjectURL() string { return c.URL + "/" + KeyChannel }

// check refuses a record that ParseChannel would refuse.
func (c Channel) check() error {
	if c.Sequence == 0 || c.Sequence > maxSequence {
		return fmt.Errorf("%w: sequence %d out of range", ErrChannelMalformed, c.Sequence)
	}
	if c.URL == "" || strings.ContainsAny(c.URL, " \t\r\n") {
		return fmt.Errorf("%w: url %q", ErrChannelMalformed, c.URL)
	}
	if c.Expires.IsZero() || !c.Expires.After(c.Issued) {
		return fmt.Errorf("%w: a record needs an expiry after it is issued", ErrChannelMalformed)
	}
	if err := checkChannelVersion(c.Latest, KindRelease); err != nil {
		return err
	}
	if err := checkChannelVersion(c.Preview, KindPreview); err != nil {
		return err
	}
	return checkChannelImages(c)
}

// checkChannelImages refuses image lines out of order, twice, of a
// pointer the record does not name, or with a malformed name or digest.
func checkChannelImages(c Channel) error {
	if len(c.Images) > maxChannelImages {
		return fmt.Errorf("%w: %d images, over %d", ErrChannelMalformed, len(c.Images), maxChannelImages)
	}
	for i, im := range c.Images {
		named := im.Pointer == KeyLatest && c.Latest != "" || im.Pointer == KeyPreview && c.Preview != ""
		if !named || !validName(im.Name) || !oci.ValidDigest(im.Index) {
			return fmt.Errorf("%w: image line %q %q %q", ErrChannelMalformed, im.Pointer, im.Name, im.Index)
		}
		if i > 0 && compareChannelImages(c.Images[i-1], im) >= 0 {
			return fmt.Errorf("%w: image lines out of order or twice (%s %s)", ErrChannelMalformed, im.Pointer, im.Name)
		}
	}
	return nil
}

func compareChannelImages(a, b ChannelImage) int {
	rank := func(p string) int {
		if p == KeyLatest {
			return 0
		}
		return 1
	}
	if c := rank(a.Pointer) - rank(b.Pointer); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

func checkChannelVersion(s, kind string) error {
	if s == "" {
		return nil
	}
	v, err := ParseVersion(s)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrChannelMalformed, err)
	}
	if v.Kind() != kind || v.String() != s {
		return fmt.Errorf("%w: %s %s is not a %s version", ErrChannelMalformed, kindPointer(kind), s, kind)
	}
	return nil
}

func kindPointer(kind string) string {
	if kind == KindPreview {
		return KeyPreview
	}
	return KeyLatest
}

// ParseChannel reads a record without checking its signature: the
// record, the signed bytes and the signature text. It is strict: the
// lines in the order Body writes them, each once, nothing else; a record
// of format 1 (signed bare) is refused. Errors: ErrChannelMalformed.
func ParseChannel(b []byte) (c Channel, body, sig []byte, err error) {
	c, body, sig, v1, err := parseChannel(b)
	if err == nil && v1 {
		return Channel{}, nil, nil, fmt.Errorf("%w: format 1, signed before wharf signed metadata in a context of its own; write a new record with wharf channel resign", ErrChannelMalformed)
	}
	return c, body, sig, err
}

// parseChannel is ParseChannel that also reads format 1 (v1 true), whose
// expires was optional.
func parseChannel(b []byte) (c Channel, body, sig []byte, v1 bool, err error) {
	bad := func(format string, args ...any) (Channel, []byte, []byte, bool, error) {
		return Channel{}, nil, nil, false, fmt.Errorf("%w: %s", ErrChannelMalformed, fmt.Sprintf(format, args...))
	}
	if len(b) > maxChannelSize {
		return bad("larger than %d bytes", maxChannelSize)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return bad("does not end with a newline (cut off?)")
	}
	for i, x := range b {
		if (x < 0x20 && x != '\n') || x > 0x7e {
			return bad("byte %#02x at offset %d: a record is lines of printable ASCII", x, i)
		}
	}
	i := bytes.LastIndex(b[:len(b)-1], []byte("\n"))
	if i < 0 {
		return bad("one line")
	}
	body, last := b[:i+1], string(b[i+1:len(b)-1])
	sigText, ok := strings.CutPrefix(last, "signature ")
	if !ok || !isBase64(sigText) {
		return bad("the last line is not the signature")
	}
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	v1 = lines[0] == channelMagicV1
	if lines[0] != channelMagic && !v1 {
		return bad("first line %.40q, want %q", lines[0], channelMagic)
	}
	order := []string{"sequence", "issued", "expires", "url", "latest", "preview", "image"}
	optional := map[string]bool{"expires": v1, "latest": true, "preview": true, "image": true}
	next := 0
	for _, line := range lines[1:] {
		name, value, _ := strings.Cut(line, " ")
		if name == "image" && !v1 && next == len(order) {
			next-- // image lines repeat
		}
		j := next
		for j < len(order) && order[j] != name {
			if !optional[order[j]] {
				return bad("no %s line before %.20q", order[j], name)
			}
			j++
		}
		if j == len(order) {
			return bad("unexpected line %.40q", line)
		}
		next = j + 1
		switch name {
		case "sequence":
			n, err := strconv.ParseUint(value, 10, 64)
			if err != nil || n == 0 || n > maxSequence || value[0] == '0' {
				return bad("sequence %.20q is not a number from 1", value)
			}
			c.Sequence = n
		case "issued", "expires":
			t, err := parseChannelTime(value)
			if err != nil {
				return bad("%s: %v", name, err)
			}
			if name == "issued" {
				c.Issued = t
			} else {
				c.Expires = t
			}
		case "url":
			if value == "" || strings.ContainsAny(value, " \t\r") {
				return bad("url %.60q", value)
			}
			c.URL = value
		case "latest", "preview":
			kind := KindRelease
			if name == "preview" {
				kind = KindPreview
			}
			if err := checkChannelVersion(value, kind); err != nil || value == "" {
				return bad("%s %.30q is not a %s version", name, value, kind)
			}
			if name == "latest" {
				c.Latest = value
			} else {
				c.Preview = value
			}
		case "image":
			f := strings.Split(value, " ")
			if v1 || len(f) != 3 {
				return bad("image line %.80q is not POINTER NAME DIGEST", value)
			}
			c.Images = append(c.Images, ChannelImage{Pointer: f[0], Name: f[1], Index: f[2]})
		}
	}
	if err := checkChannelImages(c); err != nil {
		return Channel{}, nil, nil, false, err
	}
	for _, name := range order[next:] {
		if !optional[name] {
			return bad("no %s line", name)
		}
	}
	if !c.Expires.IsZero() && !c.Expires.After(c.Issued) {
		return bad("expires before it was issued")
	}
	return c, body, []byte(sigText), v1, nil
}

// parseChannelTime reads "UNIX RFC3339": both must name the same second.
func parseChannelTime(s string) (time.Time, error) {
	unix, text, ok := strings.Cut(s, " ")
	n, err := strconv.ParseInt(unix, 10, 64)
	if !ok || err != nil || n <= 0 || n > 1e11 || unix[0] == '0' {
		return time.Time{}, fmt.Errorf("%.40q is not Unix seconds and an RFC 3339 time", s)
	}
	t, err := time.Parse(time.RFC3339, text)
	if err != nil || t.Unix() != n {
		return time.Time{}, fmt.Errorf("%.40q: the RFC 3339 time is not the Unix time", s)
	}
	return time.Unix(n, 0).UTC(), nil
}

// VerifyChannel parses a record and checks its signature under pub and,
// unless now is zero, its expiry. Errors: ErrChannelMalformed,
// ErrBadSignature, ErrChannelExpired (the record is returned with it).
func VerifyChannel(pub *ecdsa.PublicKey, b []byte, now time.Time) (Channel, error) {
	c, body, sig, err := ParseChannel(b)
	if err != nil {
		return Channel{}, err
	}
	if err := VerifyMetadata(pub, SignedChannel, c.ObjectURL(), body, sig); err != nil {
		return Channel{}, fmt.Errorf("%s: %w", KeyChannel, err)
	}
	if !now.IsZero() && !now.Before(c.Expires) {
		return c, fmt.Errorf("%w at %s (sequence %d): re-sign it with wharf channel resign", ErrChannelExpired, c.Expires.Format(time.RFC3339), c.Sequence)
	}
	return c, nil
}

// isBase64 reports whether s is padded standard base64 and nothing else.
func isBase64(s string) bool {
	if s == "" || len(s)%4 != 0 {
		return false
	}
	t := strings.TrimSuffix(strings.TrimSuffix(s, "="), "=")
	for _, r := range t {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '/') {
			return false
		}
	}
	return true
}
