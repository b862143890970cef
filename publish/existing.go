package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// compareExisting hashes every input (its only read, since nothing is
// uploaded) and compares with the published release.
func (r *publishRun) compareExisting(ctx context.Context, old *Release, inputs []Input) error {
	sums := make([]string, len(inputs))
	err := r.parallel(ctx, len(inputs), func(ctx context.Context, i int) error {
		h := sha256.New()
		if err := readInput(inputs[i], h); err != nil {
			return err
		}
		sums[i] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	if err != nil {
		return err
	}
	var diffs []string
	seen := map[string]bool{}
	for i, in := range inputs {
		key := Key(in.Spec.Kind, in.Spec.Name, r.v, in.Build)
		seen[key] = true
		a, ok := findArtifact(old.Artifacts, key)
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s is not in the published release", key))
		case a.SHA256 != sums[i]:
			diffs = append(diffs, fmt.Sprintf("%s: published sha256 %s, this input %s", key, a.SHA256, sums[i]))
		}
	}
	for _, a := range old.Artifacts {
		if !seen[a.Key] {
			diffs = append(diffs, fmt.Sprintf("%s is published but not in this input", a.Key))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%w; versions are immutable, publish a new version:\n  %s", ErrVersionExists, strings.Join(diffs, "\n  "))
	}
	return nil
}

// checkSigner refuses to go on with a published release whose artifacts
// were signed by another key than the signer's, before anything is
// written: that run would hand out another dl.pub and install script and
// re-sign the SHA256SUMS, while every artifact keeps its old signature.
func (r *publishRun) checkSigner(ctx context.Context, old *Release) error {
	for _, a := range old.Artifacts {
		if a.Signature == "" {
			continue
		}
		digest, err := hex.DecodeString(a.SHA256)
		if err != nil {
			return fmt.Errorf("%s: sha256 %q in %s: %w", a.Key, a.SHA256, KeyManifest, err)
		}
		if !r.validSig(ctx, digest, []byte(a.Signature)) {
			return fmt.Errorf("%w: %s does not verify under this --key; publish %s with the key that signed it, or publish a new version", ErrOtherKey, a.Key, r.v)
		}
	}
	return nil
}

func findArtifact(arts []Artifact, key string) (Artifact, bool) {
	for _, a := range arts {
		if a.Key == key {
			return a, true
		}
	}
	return Artifact{}, false
}

func sameArtifacts(a, b []Artifact) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		y, ok := findArtifact(b, x.Key)
		if !ok || y.SHA256 != x.SHA256 || y.Size != x.Size {
			return false
		}
	}
	return true
}

// readInput copies the artifact bytes of in to w: the file as it is, or
// the packed archive of an executable.
func readInput(in Input, w io.Writer) error {
	f, err := in.open()
	if err != nil {
		return err
	}
	defer f.Close()
	if in.Form == FormExecutable {
		return Pack(w, in.Spec.Executable, f, in.Size)
	}
	n, err := io.Copy(w, f)
	if err != nil {
		return fmt.Errorf("read %s: %w", in.Path, err)
	}
	if n != in.Size {
		return fmt.Errorf("read %s: %d bytes, was %d (did the file change?)", in.Path, n, in.Size)
	}
	return nil
}
