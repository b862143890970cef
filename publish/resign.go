package publish

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Resign signs a published tree's metadata again without publishing: the
// channel record (the sequence one higher, issued now, valid for expiry,
// or DefaultChannelExpiry when 0), every SHA256SUMS and releases.json
// whose signature is not valid in the context this wharf signs metadata
// in (a tree published by an earlier release of wharf, which signed them
// bare), and the install script, rendered with the new record's
// sequence. It returns the record written and the keys written, in order.
//
// The install script lists the binaries of p.Config: Resign refuses a
// config that lacks a binary the tree publishes, before writing anything.
func (p *Publisher) Resign(ctx context.Context, expiry time.Duration) (Channel, []string, error) {
	r := &publishRun{Publisher: p, res: &Result{}}
	m, _, err := r.readManifest(ctx)
	if err != nil {
		return Channel{}, nil, err
	}
	if len(m.Releases) == 0 {
		return Channel{}, nil, fmt.Errorf("%s lists no release: publish first", KeyManifest)
	}
	configured := map[string]bool{}
	for _, b := range p.Config.Binaries() {
		configured[b.Name] = true
	}
	for _, rel := range m.Releases {
		for _, a := range rel.Artifacts {
			if a.Kind == KindBinary && !configured[a.Name] {
				return Channel{}, nil, fmt.Errorf("the tree publishes the binary %s (version %s), which the config does not name: give the --config publish used, so that the install script lists it", a.Name, rel.Version)
			}
		}
	}
	pubPEM, err := r.publicKeyPEM(ctx)
	if err != nil {
		return Channel{}, nil, err
	}
	for _, rel := range m.Releases {
		v, err := ParseVersion(rel.Version)
		if err != nil {
			return Channel{}, nil, fmt.Errorf("%s: %w", KeyManifest, err)
		}
		kinds := map[string]bool{}
		for _, a := range rel.Artifacts {
			kinds[a.Kind] = true
		}
		for _, kind := range []string{KindBinary, KindImage} {
			if kinds[kind] {
				if err := r.resignSums(ctx, SumsKey(kind, v)); err != nil {
					return Channel{}, nil, err
				}
			}
		}
	}
	if err := r.signManifest(ctx); err != nil {
		return Channel{}, nil, err
	}
	u := &ChannelUpdate{
		Store: p.Store, Signer: p.Signer, URL: p.BaseURL, Expiry: expiry, Force: true,
		Now: p.Now, Logf: p.Progress.Logf,
	}
	c, _, err := u.Run(ctx)
	if err != nil {
		return Channel{}, nil, fmt.Errorf("%s: %w", KeyChannel, err)
	}
	r.wrote(KeyChannel)
	r.res.Channel = c
	if err := r.writeInstall(ctx, pubPEM); err != nil {
		return Channel{}, nil, err
	}
	return c, r.res.Written, nil
}

// resignSums signs the SHA256SUMS at key again unless its signature is
// valid in its context; the file itself is left as it is.
func (r *publishRun) resignSums(ctx context.Context, key string) error {
	b, _, err := r.readSmall(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%s is missing: publish that version again to write it", key)
	}
	if err != nil {
		return err
	}
	if _, err := ParseSums(b); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	old, etag, err := r.readSmall(ctx, SigKey(key))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err == nil && r.validMetadataSig(ctx, SignedSums, key, b, old) {
		return nil
	}
	sig, err := SignMetadata(ctx, r.Signer, SignedSums, r.BaseURL+"/"+key, b)
	if err != nil {
		return err
	}
	return r.putSmall(ctx, SigKey(key), sig, PutOptions{ContentType: "text/plain; charset=utf-8", IfMatch: etag, IfNoneMatch: etag == ""})
}

// ChannelURL is the base URL the channel record in store names (a record
// of any format wharf wrote), for commands that sign the tree again
// without being told its URL.
func ChannelURL(ctx context.Context, store Store) (string, error) {
	b, _, err := readObject(ctx, store, KeyChannel)
	if err != nil {
		return "", fmt.Errorf("%s: %w (give --base-url)", KeyChannel, err)
	}
	c, _, _, _, err := parseChannel(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w (give --base-url)", KeyChannel, err)
	}
	return c.URL, nil
}
