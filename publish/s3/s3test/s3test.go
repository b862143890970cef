// Package s3test gives tests a fresh bucket on a real MinIO server
// (internal/testenv) and the s3.Options that reach it.
package s3test

import (
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish/s3"
)

// Env returns the environment of a wharf process that publishes to m: the
// AWS_* credentials of its root user and the region.
func Env(m *testenv.MinIO) map[string]string {
	return map[string]string{
		"AWS_ACCESS_KEY_ID":     m.AccessKey,
		"AWS_SECRET_ACCESS_KEY": m.SecretKey,
		"AWS_REGION":            "us-east-1",
	}
}

// Options returns the options of a store on m; credentials come from Env,
// not from the test process's environment.
func Options(m *testenv.MinIO) s3.Options {
	env := Env(m)
	return s3.Options{
		Endpoint: m.URL(),
		Getenv:   func(k string) string { return env[k] },
	}
}

// Bucket creates a new, empty bucket on m and returns its s3:// URL and the
// options that reach it.
func Bucket(tb testing.TB, m *testenv.MinIO) (rawurl string, opts s3.Options) {
	tb.Helper()
	var b [6]byte
	rand.Read(b[:])
	rawurl = "s3://wharf-test-" + hex.EncodeToString(b[:])
	opts = Options(m)
	if err := s3.MakeBucket(tb.Context(), rawurl, opts); err != nil {
		tb.Fatalf("make bucket: %v", err)
	}
	return rawurl, opts
}

// Store opens a store on a new bucket of m (with prefix appended to the
// URL when not empty).
func Store(tb testing.TB, m *testenv.MinIO, prefix string, opts s3.Options) *s3.Store {
	tb.Helper()
	rawurl, base := Bucket(tb, m)
	if opts.Endpoint == "" {
		opts.Endpoint = base.Endpoint
	}
	if opts.Getenv == nil {
		opts.Getenv = base.Getenv
	}
	if prefix != "" {
		rawurl += "/" + prefix
	}
	s, err := s3.Open(tb.Context(), rawurl, opts)
	if err != nil {
		tb.Fatalf("open %s: %v", rawurl, err)
	}
	return s
}
