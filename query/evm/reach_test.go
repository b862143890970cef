package evm_test

import (
	"testing"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/evm/devchain"
	"github.com/wharfhq/wharf/query/evm/devchain/devchaintest"
)

// TestFullHistory: an archive node's Reader answers History back to the
// genesis, a pruned node's (its block 1's state long gone) and a Source
// that reads no state do not.
func TestFullHistory(t *testing.T) {
	ctx := t.Context()
	archive := devchaintest.Start(t, devchain.Config{Archive: true})
	pruned := devchaintest.Start(t, devchain.Config{})
	for _, d := range []*devchain.Chain{archive, pruned} {
		if _, err := d.CommitEmpty(200); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		src  query.Source
		want bool
	}{
		{"archive", devchaintest.Dial(t, archive), true},
		{"pruned", devchaintest.Dial(t, pruned), false},
		{"no state", struct{ query.Source }{devchaintest.Dial(t, archive)}, false},
	} {
		got, err := evm.NewReader(tc.src).FullHistory(ctx)
		if err != nil || got != tc.want {
			t.Errorf("%s: FullHistory = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
