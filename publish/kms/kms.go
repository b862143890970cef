// Package kms makes publish.LoadSigner understand sigstore KMS key URIs:
// importing it registers the AWS (awskms://), Google Cloud (gcpkms://),
// Azure (azurekms://) and HashiCorp Vault (hashivault://) providers.
//
// It is a package of its own so that importers of publish (the download
// server, tests) do not link four cloud SDKs they never call.
package kms

import (
	// The providers register themselves with sigstore's kms package.
	_ "github.com/sigstore/sigstore/pkg/signature/kms/aws"
	_ "github.com/sigstore/sigstore/pkg/signature/kms/azure"
	_ "github.com/sigstore/sigstore/pkg/signature/kms/gcp"
	_ "github.com/sigstore/sigstore/pkg/signature/kms/hashivault"
)
