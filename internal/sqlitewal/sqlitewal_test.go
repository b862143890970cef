package sqlitewal_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/wharfhq/wharf/internal/sqlitewal"
)

// TestEnableConcurrent: four openers of each new file all get it in WAL
// mode. Without the retries (Attempts = 1) each of ten runs failed here,
// within its first 60 files, with SQLITE_BUSY.
func TestEnableConcurrent(t *testing.T) {
	dir := t.TempDir()
	for i := range 100 {
		dsn := "file:" + filepath.Join(dir, fmt.Sprintf("%d.db", i)) + "?_pragma=busy_timeout(10000)"
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for j := range errs {
			wg.Go(func() { errs[j] = sqlitewal.Enable(context.Background(), dsn) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("file %d: %v", i, err)
		}
	}
}

func TestEnableRefused(t *testing.T) {
	tests := []struct {
		name, dsn, want string
	}{
		{"Memory", "file::memory:", `journal mode is "memory"`},
		{"Directory", "file:" + t.TempDir(), "switch to WAL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := sqlitewal.Enable(context.Background(), tt.dsn)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Enable(%s) = %v, want an error with %q", tt.dsn, err, tt.want)
			}
		})
	}
}
