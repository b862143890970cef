package auth_test

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/site"
	"github.com/wharfhq/wharf/site/auth"
)

// BenchmarkAPIKey is the check of an API key as a request makes it: a
// valid key (its last use stamped already, as for every request but one
// a minute) and an unknown one, on SQLite and PostgreSQL, with 100 keys
// in the table. cpu-ns/op is this process's CPU (SQLite runs in it; on
// PostgreSQL the server's work is not counted), which the machine's load
// moves less than the time.
func BenchmarkAPIKey(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			dsn := filepath.Join(b.TempDir(), "wharf.db")
			if name == "postgres" {
				dsn = testenv.Postgres(b)
			}
			db := mustOpen(b, dsn)
			ctx := context.Background()
			mustOrg(b, db, "acme", site.LevelFull)
			var secret string
			for range 100 {
				var err error
				if _, secret, err = db.CreateAPIKey(ctx, "acme"); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := db.APIKey(ctx, secret); err != nil { // stamps its last use
				b.Fatal(err)
			}
			for _, c := range []struct {
				name, key string
				want      error
			}{{"valid", secret, nil}, {"unknown", secret[:len(secret)-1] + "x", site.ErrUnauthenticated}} {
				b.Run(c.name, func(b *testing.B) { benchAPIKey(b, db, c.key, c.want) })
			}
		})
	}
}

func benchAPIKey(b *testing.B, db *auth.DB, key string, want error) {
	ctx := context.Background()
	b.ReportAllocs()
	cpu := selfCPU(b)
	for b.Loop() {
		if _, err := db.APIKey(ctx, key); !errors.Is(err, want) {
			b.Fatalf("APIKey = %v, want %v", err, want)
		}
	}
	b.ReportMetric(float64((selfCPU(b)-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// selfCPU is the CPU time this process has used.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
