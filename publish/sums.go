package publish

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// writeSums writes SHA256SUMS (sha256sum format) and its .sig for each
// kind of the release.
func (r *publishRun) writeSums(ctx context.Context, arts []Artifact, inputs []Input) error {
	kinds := map[string][]Artifact{}
	var order []string
	if r.DryRun && !r.res.Existing {
		for _, in := range inputs {
			if _, ok := kinds[in.Kind()]; !ok {
				order = append(order, in.Kind())
			}
			kinds[in.Kind()] = nil
		}
		for _, k := range order {
			r.wrote(SumsKey(k, r.v))
			r.wrote(SigKey(SumsKey(k, r.v)))
		}
		return nil
	}
	for _, a := range arts {
		if _, ok := kinds[a.Kind]; !ok {
			order = append(order, a.Kind)
		}
		kinds[a.Kind] = append(kinds[a.Kind], a)
	}
	for _, kind := range order {
		list := slices.Clone(kinds[kind])
		sort.Slice(list, func(i, j int) bool { return list[i].FileName() < list[j].FileName() })
		var b bytes.Buffer
		for _, a := range list {
			fmt.Fprintf(&b, "%s  %s\n", a.SHA256, a.FileName())
		}
		key := SumsKey(kind, r.v)
		old, _, err := r.readSmall(ctx, key)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if err == nil && bytes.Equal(old, b.Bytes()) {
			// Same content; keep its signature if it is valid.
			sum := sha256.Sum256(old)
			if sig, _, err := r.readSmall(ctx, SigKey(key)); err == nil && r.validSig(ctx, sum[:], sig) {
				continue
			}
		} else if err := r.putSmall(ctx, key, b.Bytes(), PutOptions{ContentType: "text/plain; charset=utf-8"}); err != nil {
			return err
		}
		sum := sha256.Sum256(b.Bytes())
		der, err := r.Signer.SignDigest(ctx, sum[:])
		if err != nil {
			return fmt.Errorf("sign %s: %w", key, err)
		}
		if err := r.putSmall(ctx, SigKey(key), SignatureText(der), PutOptions{ContentType: "text/plain; charset=utf-8"}); err != nil {
			return err
		}
	}
	return nil
}
