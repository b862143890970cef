package auth_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/site/auth"
)

// TestDatabaseFilesPrivate: the SQLite file holds the key that signs
// access tokens, so it and its -wal and -shm are 0600, new or not.
func TestDatabaseFilesPrivate(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name     string
		existing os.FileMode // 0: a new file
	}{
		{"New", 0},
		{"ExistingWorldReadable", 0o644},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "wharf.db")
			if tt.existing != 0 {
				db, err := auth.Open(ctx, path)
				if err != nil {
					t.Fatal(err)
				}
				db.Close()
				for _, p := range []string{path, path + "-wal", path + "-shm"} {
					os.Chmod(p, tt.existing)
				}
			}
			db, err := auth.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			// Writes make SQLite create the -wal and -shm files.
			if _, err := db.CreateOrg(ctx, "acme", "basic"); err != nil {
				t.Fatal(err)
			}
			if _, _, err := db.CreateToken(ctx, "nobody"); err == nil {
				t.Fatal("token for a missing user")
			}
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				st, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				if got := st.Mode().Perm(); got != 0o600 {
					t.Errorf("%s: mode %v, want 0600", filepath.Base(p), got)
				}
			}
		})
	}
}
