package parallel_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/wharfhq/wharf/internal/parallel"
)

func TestDo(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name     string
		n, limit int
		fail     int // the step that fails, -1 none
		want     error
	}{
		{"all run", 50, 4, -1, nil},
		{"limit zero runs one at a time", 5, 0, -1, nil},
		{"first error", 50, 1, 3, boom},
		{"none", 0, 4, -1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ran, running, most atomic.Int64
			err := parallel.Do(t.Context(), tt.n, tt.limit, func(ctx context.Context, i int) error {
				ran.Add(1)
				now := running.Add(1)
				defer running.Add(-1)
				for {
					m := most.Load()
					if now <= m || most.CompareAndSwap(m, now) {
						break
					}
				}
				if i == tt.fail {
					return boom
				}
				return nil
			})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Do = %v, want %v", err, tt.want)
			}
			if most.Load() > int64(max(1, tt.limit)) {
				t.Errorf("%d steps ran at once, limit %d", most.Load(), tt.limit)
			}
			switch {
			case tt.fail < 0 && ran.Load() != int64(tt.n):
				t.Errorf("ran %d of %d steps", ran.Load(), tt.n)
			case tt.fail >= 0 && tt.limit == 1 && ran.Load() > int64(tt.fail+2):
				// The step queued while the failing one ran may still start.
				t.Errorf("one at a time, %d steps ran after step %d failed", ran.Load()-int64(tt.fail+1), tt.fail)
			}
		})
	}
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		cause := errors.New("stopped")
		cancel(cause)
		err := parallel.Do(ctx, 10, 2, func(context.Context, int) error { return nil })
		if !errors.Is(err, cause) {
			t.Fatalf("Do on a canceled context = %v, want its cause", err)
		}
	})
}
