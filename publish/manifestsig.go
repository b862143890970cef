package publish

import "context"

// signManifest leaves releases.json.sig one valid signature of the
// manifest there now (ensureSigned), so that a re-run finishes what a
// publish stopped between writing releases.json and its .sig.
// writeDerived re-reads the manifest afterwards and signs again if it
// changed meanwhile.
func (r *publishRun) signManifest(ctx context.Context) error {
	return r.ensureSigned(ctx, KeyManifest, true)
}
