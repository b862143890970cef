package publish

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// ChannelUpdate writes the channel record of a tree: after a publish has
// moved the pointers, and from wharf channel resign to push its expiry
// further. The record names the newer of what it named and what the
// pointers name, so it never moves backwards either, and its sequence
// grows by one with every write. Writes are conditional on the record
// they replace (S3 If-Match, the lock of a directory store): of two
// concurrent writers one writes again on top of the other's record.
type ChannelUpdate struct {
	Store  Store
	Signer Signer
	// URL is the download server's URL, written into the record; "" keeps
	// the one of the record there.
	URL string
	// Expiry is how long a new record is valid, at most
	// MaxChannelExpiry; 0 for DefaultChannelExpiry, or, with KeepExpiry,
	// for as long as the record there was (issued to expires).
	Expiry time.Duration
	// KeepExpiry makes a zero Expiry keep the validity of the record there
	// (publish without --channel-expiry): a vendor who rotates the expiry
	// from a scheduled job does not lose it at the next publish.
	KeepExpiry bool
	// Force writes a new record even when the one there names the same
	// versions and is valid long enough (wharf channel resign).
	Force  bool
	Now    func() time.Time
	DryRun bool
	// Logf reports what happened, one line; may be nil.
	Logf func(format string, args ...any)
}

// Run writes the record when it must and returns the record that is
// there afterwards and whether this call wrote it.
func (u *ChannelUpdate) Run(ctx context.Context) (Channel, bool, error) {
	pub, err := u.Signer.PublicKey(ctx)
	if err != nil {
		return Channel{}, false, fmt.Errorf("signing key: %w", err)
	}
	for {
		old, etag, err := readObject(ctx, u.Store, KeyChannel)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return Channel{}, false, err
		}
		var cur Channel
		valid := false
		if err == nil {
			// The sequence carries on from any record that parses, even
			// one of another key or of format 1: clients have seen it.
			if c, _, _, _, perr := parseChannel(old); perr == nil {
				cur = c
				_, verr := VerifyChannel(pub, old, time.Time{})
				valid = verr == nil
			} else {
				u.logf("warning: %s is not a channel record (%v); writing a new one", KeyChannel, perr)
			}
		}
		latest, err := readPointerVersion(ctx, u.Store, KeyLatest)
		if err != nil {
			return Channel{}, false, err
		}
		preview, err := readPointerVersion(ctx, u.Store, KeyPreview)
		if err != nil {
			return Channel{}, false, err
		}
		now := u.Now().UTC().Truncate(time.Second)
		next := Channel{
			Sequence: cur.Sequence + 1,
			Issued:   now,
			URL:      u.URL,
			Latest:   newerVersion(cur.Latest, latest),
			Preview:  newerVersion(cur.Preview, preview),
		}
		if next.URL == "" {
			next.URL = cur.URL
		}
		if next.URL == "" {
			return Channel{}, false, fmt.Errorf("%s: no URL to write into it (publish first, or give --base-url)", KeyChannel)
		}
		if next.Images, err = channelImages(ctx, u.Store, next); err != nil {
			return Channel{}, false, err
		}
		expiry, err := u.expiry(cur)
		if err != nil {
			return Channel{}, false, err
		}
		next.Expires = now.Add(expiry)
		if valid && !u.Force && next.Latest == cur.Latest && next.Preview == cur.Preview && next.URL == cur.URL &&
			slices.Equal(next.Images, cur.Images) && !u.expiresSoon(cur, now) {
			return cur, false, nil
		}
		body, err := next.Sign(ctx, u.Signer)
		if err != nil {
			return Channel{}, false, err
		}
		if u.DryRun {
			return next, true, nil
		}
		sum := sha256.Sum256(body)
		_, err = u.Store.Put(ctx, KeyChannel, bytes.NewReader(body), int64(len(body)), PutOptions{
			ContentType:  "text/plain; charset=utf-8",
			CacheControl: CacheControl(KeyChannel, ""),
			SHA256:       sum[:],
			IfMatch:      etag,
			IfNoneMatch:  etag == "",
		})
		if errors.Is(err, ErrPreconditionFailed) {
			u.logf("%s changed meanwhile (another publisher); writing again on top of it", KeyChannel)
			continue
		}
		if err != nil {
			return Channel{}, false, err
		}
		return next, true, nil
	}
}

// expiry is how long the next record is valid.
func (u *ChannelUpdate) expiry(cur Channel) (time.Duration, error) {
	d := u.Expiry
	if d == 0 && u.KeepExpiry && !cur.Expires.IsZero() {
		d = cur.Expires.Sub(cur.Issued)
	}
	if d == 0 {
		d = DefaultChannelExpiry
	}
	if err := CheckChannelExpiry(d); err != nil {
		return 0, fmt.Errorf("%s: %w", KeyChannel, err)
	}
	return d, nil
}

// CheckChannelExpiry refuses a validity a record may not have.
func CheckChannelExpiry(d time.Duration) error {
	if d < time.Minute || d > MaxChannelExpiry {
		return fmt.Errorf("expiry %s: want from 1m to %s (%d days); a record without an expiry is refused by install scripts", d, MaxChannelExpiry, MaxChannelExpiry/(24*time.Hour))
	}
	return nil
}

// expiresSoon: a record with less than half of the validity asked for
// left is written again, and so is one valid for longer than asked (the
// vendor shortened it: a mirror could freeze machines on it that long).
func (u *ChannelUpdate) expiresSoon(c Channel, now time.Time) bool {
	want := u.Expiry
	if want == 0 {
		if u.KeepExpiry {
			return false
		}
		want = DefaultChannelExpiry
	}
	left := c.Expires.Sub(now)
	return left < want/2 || left > want
}

func (u *ChannelUpdate) logf(format string, args ...any) {
	if u.Logf != nil {
		u.Logf(format, args...)
	}
}

// newerVersion is the newer of two versions of one kind, "" for none.
func newerVersion(a, b string) string {
	va, errA := ParseVersion(a)
	vb, errB := ParseVersion(b)
	switch {
	case errA != nil:
		if errB != nil {
			return ""
		}
		return vb.String()
	case errB != nil:
		return va.String()
	case vb.Compare(va) > 0:
		return vb.String()
	}
	return va.String()
}

// channelImages are the image lines of c: the index of every image of
// the releases its pointers name, as releases.json lists them.
func channelImages(ctx context.Context, s Store, c Channel) ([]ChannelImage, error) {
	if c.Latest == "" && c.Preview == "" {
		return nil, nil
	}
	b, _, err := readObject(ctx, s, KeyManifest)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m, err := ReadManifest(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KeyManifest, err)
	}
	var out []ChannelImage
	for _, p := range []struct{ pointer, version string }{{KeyLatest, c.Latest}, {KeyPreview, c.Preview}} {
		rel, ok := m.Find(p.version)
		if p.version == "" || !ok {
			continue
		}
		var ims []ChannelImage
		for _, im := range rel.Images {
			ims = append(ims, ChannelImage{Pointer: p.pointer, Name: im.Name, Index: im.Index})
		}
		slices.SortFunc(ims, compareChannelImages)
		out = append(out, ims...)
	}
	return out, nil
}

// readPointerVersion reads latest or preview: "" when missing or not a
// version of its kind.
func readPointerVersion(ctx context.Context, s Store, key string) (string, error) {
	b, _, err := readObject(ctx, s, key)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	v, err := ParseVersion(strings.TrimSpace(string(b)))
	if err != nil || (key == KeyPreview) != v.IsPreview() {
		return "", nil
	}
	return v.String(), nil
}

// readObject reads a small object whole, with its ETag.
func readObject(ctx context.Context, s Store, key string) ([]byte, string, error) {
	o, err := s.Open(ctx, key)
	if err != nil {
		return nil, "", err
	}
	defer o.Close()
	b, err := io.ReadAll(io.LimitReader(o, 64<<20))
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", key, err)
	}
	return b, o.Info().ETag, nil
}

// writeChannel writes the channel record after the pointers moved.
func (r *publishRun) writeChannel(ctx context.Context) error {
	if r.DryRun && !r.res.Existing {
		r.wrote(KeyChannel)
		return nil
	}
	u := &ChannelUpdate{
		Store: r.Store, Signer: r.Signer, URL: r.BaseURL, Expiry: r.ChannelExpiry, KeepExpiry: r.KeepChannelExpiry,
		Now: r.Now, DryRun: r.DryRun, Logf: r.Progress.Logf,
	}
	c, wrote, err := u.Run(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", KeyChannel, err)
	}
	if wrote {
		r.wrote(KeyChannel)
		if !r.DryRun {
			r.Progress.Logf("%s is now sequence %d (latest %s, preview %s%s)", KeyChannel, c.Sequence, orNone(c.Latest), orNone(c.Preview), expiryNote(c))
		}
	}
	r.res.Channel = c
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func expiryNote(c Channel) string {
	return ", expires " + c.Expires.Format(time.RFC3339)
}
