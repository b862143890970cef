package site_test

import (
	"github.com/wharfhq/wharf/publish"
)

// How the vendor's key signs, for the install script generator: what a
// verifier checks for a record and a SHA256SUMS, and which bytes publish
// signs as a download. The generator builds its attacks on these alone.

// recordMagic is the first line of a channel record.
const recordMagic = "wharf-channel 2"

// recordSignedBytes is what a record's signature covers, for the body of
// a record of the tree at url.
func recordSignedBytes(url string, body []byte) []byte {
	return publish.SignContext(publish.PayloadType(publish.SignedChannel, url+"/"+publish.KeyChannel), body)
}

// sumsSignedBytes is what the signature of the SHA256SUMS at objURL
// covers.
func sumsSignedBytes(objURL string, body []byte) []byte {
	return publish.SignContext(publish.PayloadType(publish.SignedSums, objURL), body)
}

// publishSignsArtifact reports whether publish signs b as a download.
func publishSignsArtifact(b []byte) bool {
	return !publish.IsSignContext(b[:min(len(b), publish.SignContextMagicLen)])
}

// signSumsFor signs body as the SHA256SUMS at key of the tree at base.
func signSumsFor(tr *tree, base, key string, body []byte) []byte {
	saved := tr.baseURL
	tr.baseURL = base
	defer func() { tr.baseURL = saved }()
	return tr.signMetadata(publish.SignedSums, key, body)
}

// signRecordFor signs body as a channel record of the tree at url.
func signRecordFor(tr *tree, url string, body []byte) []byte {
	saved := tr.baseURL
	tr.baseURL = url
	defer func() { tr.baseURL = saved }()
	return tr.signMetadata(publish.SignedChannel, publish.KeyChannel, body)
}
