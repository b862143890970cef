package webhook

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// secretPrefix starts every signing secret (Standard Webhooks).
const secretPrefix = "whsec_"

// NewSecret returns a fresh signing secret: whsec_ and base64 of 32
// random bytes from r.
func NewSecret(r io.Reader) (string, error) {
	b := make([]byte, 32)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("webhook secret: %w", err)
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// signer signs deliveries with a secret, and the one it replaced while
// that is still in use (rotation: both signatures are sent).
type signer struct {
	keys []*standardwebhooks.Webhook
}

// newSigner returns the signer of secret and, when not "", old.
func newSigner(secret, old string) (signer, error) {
	var s signer
	for _, sec := range []string{secret, old} {
		if sec == "" {
			continue
		}
		if !strings.HasPrefix(sec, secretPrefix) {
			return signer{}, fmt.Errorf("webhook secret: not a %s secret", secretPrefix)
		}
		k, err := standardwebhooks.NewWebhook(sec)
		if err != nil {
			return signer{}, fmt.Errorf("webhook secret: %w", err)
		}
		s.keys = append(s.keys, k)
	}
	return s, nil
}

// headers sets the Standard Webhooks headers of a delivery of body as
// message id at t.
func (s signer) headers(h http.Header, id string, t time.Time, body []byte) error {
	sigs := make([]string, 0, len(s.keys))
	for _, k := range s.keys {
		sig, err := k.Sign(id, t, body)
		if err != nil {
			return fmt.Errorf("webhook signature: %w", err)
		}
		sigs = append(sigs, sig)
	}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(t.Unix(), 10))
	h.Set("webhook-signature", strings.Join(sigs, " "))
	return nil
}
