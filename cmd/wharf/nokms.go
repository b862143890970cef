//go:build !kms

package main

// kmsProviders reports whether --key takes KMS URIs. By default wharf is
// built without the four cloud KMS providers (publish/kms: the AWS, Google
// Cloud and Azure SDKs, HashiCorp Vault, and gRPC under them): only
// signing with a cloud key needs them, and they were about a third of a
// first build's downloads and compile time (README, "The first build").
// make build TAGS=kms, or go build -tags kms ./cmd/wharf, adds them; the
// release workflow builds wharf so.
const kmsProviders = false
