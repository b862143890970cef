package publish_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/wharfhq/wharf/publish"
)

// TestVerifyAny: a .sig of a file being replaced holds the signatures of
// the old and the new bytes and verifies both; nothing else verifies.
func TestVerifyAny(t *testing.T) {
	signer := fixedSigner(t)
	pub, err := signer.PublicKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sig := func(b string) string {
		sum := sha256.Sum256([]byte(b))
		der, err := signer.SignDigest(context.Background(), sum[:])
		if err != nil {
			t.Fatal(err)
		}
		return string(publish.SignatureText(der))
	}
	oldSig, newSig := sig("old"), sig("new")
	tests := []struct {
		name, file, sig string
		ok              bool
	}{
		{"OneLine", "new", newSig, true},
		{"BothNew", "new", newSig + "\n" + oldSig, true},
		{"BothOld", "old", newSig + "\n" + oldSig, true},
		{"TrailingNewline", "old", newSig + "\n" + oldSig + "\n", true},
		{"GarbageFirst", "old", "not-base64!\n" + oldSig, true},
		{"ErrOther", "other", newSig + "\n" + oldSig, false},
		{"ErrEmpty", "new", "", false},
		{"ErrBlankLines", "new", "\n\n", false},
		{"ErrJoined", "new", newSig + oldSig, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := publish.VerifyAny(pub, bytes.NewReader([]byte(tt.file)), []byte(tt.sig))
			if tt.ok && err != nil {
				t.Errorf("VerifyAny = %v, want nil", err)
			}
			if !tt.ok && !errors.Is(err, publish.ErrBadSignature) {
				t.Errorf("VerifyAny = %v, want ErrBadSignature", err)
			}
		})
	}
}
