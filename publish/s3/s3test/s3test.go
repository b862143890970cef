// Package s3test gives tests a fresh bucket on a real MinIO server (the
// *testenv.MinIO of internal/testenv) and the s3.Options that reach it.
package s3test

import (
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/wharfhq/wharf/publish/s3"
)

// Server is a running MinIO, such as a *testenv.MinIO. It is an interface
// so that this package need not import internal/testenv, which the
// layering rule (internal/deptest) reserves for tests.
type Server interface {
	URL() string                          // http://host:port
	Credentials() (access, secret string) // the root user's keys
}

// Env returns the environment of a wharf process that publishes to m: the
// AWS_* credentials of its root user and the region.
func Env(m Server) map[string]string {
	access, secret := m.Credentials()
	return map[string]string{
		"AWS_ACCESS_KEY_ID":     access,
		"AWS_SECRET_ACCESS_KEY": secret,
		"AWS_REGION":            "us-east-1",
	}
}

// Options returns the options of a store on m; credentials come from Env,
// not from the test process's environment.
func Options(m Server) s3.Options {
	env := Env(m)
	return s3.Options{
		Endpoint: m.URL(),
		Getenv:   func(k string) string { return env[k] },
	}
}

// Bucket creates a new, empty bucket on m and returns its s3:// URL and the
// options that reach it.
func Bucket(tb testing.TB, m Server) (rawurl string, opts s3.Options) {
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
func Store(tb testing.TB, m Server, prefix string, opts s3.Options) *s3.Store {
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
