package s3_test

import (
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/s3"
	"github.com/wharfhq/wharf/publish/s3/s3test"
	"github.com/wharfhq/wharf/publish/storetest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestConformance(t *testing.T) {
	for _, prefix := range []string{"", "some/prefix"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) publish.Store {
				return s3test.Store(t, testenv.SharedMinIO(t), prefix, s3.Options{PartSize: s3.MinPartSize})
			})
		})
	}
}
