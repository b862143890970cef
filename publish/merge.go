package publish

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
)

// readManifest reads releases.json; a missing one is an empty manifest
// with etag "".
func (r *publishRun) readManifest(ctx context.Context) (*Manifest, string, error) {
	o, err := r.Store.Open(ctx, KeyManifest)
	if errors.Is(err, ErrNotFound) {
		return &Manifest{Schema: ManifestSchema}, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	defer o.Close()
	m, err := ReadManifest(o)
	if err != nil {
		return nil, "", err
	}
	return m, o.Info().ETag, nil
}

// checkVersion enforces the spec's version rules against the manifest.
func (r *publishRun) checkVersion(m *Manifest) error {
	prev, ok := m.PreviousRelease(r.v)
	if err := r.v.CheckPreview(prev, ok); err != nil {
		return err
	}
	if r.v.IsPreview() {
		rel := Version{Year: r.v.Year, Feature: r.v.Feature, Patch: r.v.Patch}
		if _, done := m.Find(rel.String()); done {
			return fmt.Errorf("preview %s: %s is already released; a preview comes before its release (the next previews are %02d.%d.%d-pre.C)",
				r.v, rel, rel.Year, rel.Feature, rel.Patch+1)
		}
	}
	return nil
}

// mergeManifest adds the release to releases.json with a compare-and-swap
// loop: a concurrent publisher's version is never lost. releases.json.sig
// changes with it (replaceSigned).
func (r *publishRun) mergeManifest(ctx context.Context, arts []Artifact) error {
	for {
		m, etag, err := r.readManifest(ctx)
		if err != nil {
			return err
		}
		if old, ok := m.Find(r.v.String()); ok {
			if !sameArtifacts(old.Artifacts, arts) {
				return fmt.Errorf("%w: %s was published meanwhile with other artifacts", ErrVersionExists, r.v)
			}
			images := !sameImages(old.Images, r.imgs)
			if images && len(old.Images) > 0 {
				return fmt.Errorf("%w: %s lists other images in %s", ErrVersionExists, r.v, KeyManifest)
			}
			// The notes are not part of the signed release: new ones
			// replace the old. Attestations added to a published
			// version (attestMissing) are listed; listed ones stay.
			notes := r.Notes != "" && old.Notes != r.Notes
			attested := addAttestations(old.Artifacts, arts)
			if !images && addImageAttestations(old.Images, r.imgs) {
				attested = true
			}
			if !notes && !images && !attested {
				return nil
			}
			if notes {
				old.Notes, old.NotesHTML = r.Notes, r.notesHTML
				r.Progress.Logf("%s: replacing its release notes", r.v)
			}
			if images {
				// A release published before its images were served
				// from the registry tree gains them.
				old.Images = r.imgs
			}
			if attested && old.Provenance == nil {
				old.Provenance = r.Provenance.Summary()
			}
		} else {
			// A concurrent publish may have added the release this
			// preview follows.
			if err := r.checkVersion(m); err != nil {
				return err
			}
			m.Merge(Release{Version: r.v.String(), Kind: r.v.Kind(), Published: r.Now().UTC(), Artifacts: arts, Images: r.imgs, Notes: r.Notes, NotesHTML: r.notesHTML,
				Provenance: r.Provenance.Summary()})
		}
		var b bytes.Buffer
		if err := m.Encode(&b); err != nil {
			return fmt.Errorf("encode %s: %w", KeyManifest, err)
		}
		err = r.replaceSigned(ctx, KeyManifest, etag, b.Bytes(), PutOptions{ContentType: "application/json"})
		if errors.Is(err, ErrPreconditionFailed) {
			r.Progress.Logf("%s changed meanwhile (another publisher); merging again", KeyManifest)
			continue
		}
		return err
	}
}

// sameImages reports whether two releases' images are the same indexes.
func sameImages(a, b []Image) bool {
	return slices.EqualFunc(a, b, func(x, y Image) bool {
		return x.Name == y.Name && x.Index == y.Index && x.Repository == y.Repository
	})
}

// addImageAttestations lists in the published images old the
// attestations attached to the same images now (imgs) when they differ;
// it reports whether it changed any.
func addImageAttestations(old, imgs []Image) bool {
	changed := false
	for i := range old {
		j := slices.IndexFunc(imgs, func(im Image) bool { return im.Name == old[i].Name && im.Index == old[i].Index })
		if j < 0 || len(imgs[j].Attestations) == 0 || slices.EqualFunc(old[i].Attestations, imgs[j].Attestations, sameImageAttestation) {
			continue
		}
		old[i].Attestations = imgs[j].Attestations
		changed = true
	}
	return changed
}

func sameImageAttestation(a, b ImageAttestation) bool {
	return a.PredicateType == b.PredicateType && a.Envelope == b.Envelope && slices.Equal(a.Subjects, b.Subjects)
}

// addAttestations lists in the published artifacts old the attestations
// of arts (the same artifacts) that they lack, by predicate type; it
// reports whether it added any.
func addAttestations(old, arts []Artifact) bool {
	added := false
	for i := range old {
		a, ok := findArtifact(arts, old[i].Key)
		if !ok {
			continue
		}
		for _, at := range a.Attestations {
			if !slices.ContainsFunc(old[i].Attestations, func(o Attestation) bool { return o.PredicateType == at.PredicateType }) {
				old[i].Attestations = append(old[i].Attestations, at)
				added = true
			}
		}
	}
	return added
}
