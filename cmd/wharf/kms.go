//go:build kms

package main

// The cloud KMS providers, for --key URIs; see nokms.go.
import _ "github.com/wharfhq/wharf/publish/kms"

// kmsProviders reports whether --key takes KMS URIs: in this build, it does.
const kmsProviders = true
