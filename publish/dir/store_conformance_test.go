package dir_test

import (
	"testing"

	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/dir"
	"github.com/wharfhq/wharf/publish/storetest"
)

// TestConformance runs the store suite that every publish.Store passes.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) publish.Store {
		s, err := dir.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
