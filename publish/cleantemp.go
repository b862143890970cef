package publish

import "context"

// cleanTemp removes what killed publishes left in the store (older than
// TempAge). A failure is only reported: it does not stop the publish.
func (r *publishRun) cleanTemp(ctx context.Context, inputs []Input) {
	c, ok := r.Store.(TempCleaner)
	if !ok || r.DryRun || r.TempAge <= 0 {
		return
	}
	keys := make([]string, len(inputs))
	for i, in := range inputs {
		keys[i] = Key(in.Spec.Kind, in.Spec.Name, r.v, in.Build)
	}
	n, size, err := c.CleanTemp(ctx, r.TempAge, keys)
	if err != nil {
		r.Progress.Logf("warning: cleaning up after killed publishes: %v", err)
	}
	if n > 0 {
		r.Progress.Logf("removed %d leftovers of killed publishes older than %v (%d bytes)", n, r.TempAge, size)
	}
}
