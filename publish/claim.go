package publish

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
)

// ClaimKey is the key of the claim a publisher writes, only if absent,
// before the first artifact of a version: it names the version and the
// SHA-256 of every input file. A second publisher of the same version with
// other bytes finds a different claim and is refused before it writes
// anything, so two racing publishes never leave a mix of both inputs; one
// with the same bytes (a re-run after a crash, or the same job twice) finds
// the same claim and goes on.
func ClaimKey(v Version) string { return ".claims/" + v.String() }

// claim takes the version for these inputs, or finds it taken for the
// same inputs. Its digests are of the input files as they are, from
// readInputs: an image's from the read of its archive, any other's from
// the read that also took its SBOM (the packed archive of an executable
// is only hashed while it uploads).
func (r *publishRun) claim(ctx context.Context, inputs []Input) error {
	sums := r.sums
	lines := make([]string, len(inputs))
	for i, in := range inputs {
		lines[i] = fmt.Sprintf("%s  %s %s\n", sums[i], Key(in.Spec.Kind, in.Spec.Name, r.v, in.Build), in.Form)
	}
	sort.Strings(lines)
	var b bytes.Buffer
	fmt.Fprintf(&b, "wharf publish claim of %s: the sha256 of each input file, the artifact it is published as, and its form\n", r.v)
	for _, l := range lines {
		b.WriteString(l)
	}
	key := ClaimKey(r.v)
	err := r.putSmall(ctx, key, b.Bytes(), PutOptions{ContentType: "text/plain; charset=utf-8", IfNoneMatch: true})
	if !errors.Is(err, ErrPreconditionFailed) {
		return err
	}
	old, _, err := r.readSmall(ctx, key)
	if err != nil {
		return err
	}
	if !bytes.Equal(old, b.Bytes()) {
		return fmt.Errorf("%w: %s is being published, or was and did not finish, with other inputs (see %s); versions are immutable, publish a new version (or, if %s was never announced, remove its objects and %s by hand)",
			ErrVersionExists, r.v, key, r.v, key)
	}
	r.Progress.Logf("%s is claimed for these same inputs (an earlier or concurrent run); going on", r.v)
	return nil
}
