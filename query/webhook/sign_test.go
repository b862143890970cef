package webhook

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/wharfhq/wharf/internal/testenv"
)

// TestSignVector signs the Standard Webhooks specification's test vector.
func TestSignVector(t *testing.T) {
	s, err := newSigner("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "")
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	if err := s.headers(h, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`)); err != nil {
		t.Fatal(err)
	}
	if got, want := h.Get("webhook-signature"), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
	if h.Get("webhook-id") != "msg_p5jXN8AQM9LWM0D4loKWxJek" || h.Get("webhook-timestamp") != "1614265330" {
		t.Fatalf("headers %v", h)
	}
}

// TestSignRotation: while a rotated-out secret still signs, a receiver
// holding either secret verifies with the reference Go library, and one
// holding neither does not.
func TestSignRotation(t *testing.T) {
	old, _ := NewSecret(strings.NewReader(strings.Repeat("a", 32)))
	cur, _ := NewSecret(strings.NewReader(strings.Repeat("b", 32)))
	other, _ := NewSecret(strings.NewReader(strings.Repeat("c", 32)))
	s, err := newSigner(cur, old)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":"evt_1","type":"balance_change"}`)
	h := http.Header{}
	if err := s.headers(h, "evt_1", time.Now(), body); err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(h.Get("webhook-signature"))); n != 2 {
		t.Fatalf("%d signatures during rotation: %s", n, h.Get("webhook-signature"))
	}
	for _, sec := range []string{old, cur, other} {
		wh, err := standardwebhooks.NewWebhook(sec)
		if err != nil {
			t.Fatal(err)
		}
		err = wh.Verify(body, h)
		if (err == nil) != (sec != other) {
			t.Errorf("verify with secret %s…: %v", sec[:10], err)
		}
	}
	if _, err := newSigner("not-a-secret", ""); err == nil {
		t.Fatal("a secret without whsec_ was taken")
	}
}

// TestSignPython verifies a signed delivery with the Standard Webhooks
// reference Python library (its copy in the Go module cache: it needs
// only the standard library), as a receiver in Python would.
func TestSignPython(t *testing.T) {
	py := testenv.Tool(t, "python3")
	dir := referenceLibrary(t)
	secret, _ := NewSecret(strings.NewReader(strings.Repeat("k", 32)))
	s, _ := newSigner(secret, "")
	body := []byte(`{"id":"evt_7","type":"balance_change","timestamp":"2026-03-01T12:00:00Z","cursor":"AQEH","data":{"amount":"-7"}}`)
	h := http.Header{}
	if err := s.headers(h, "evt_7", time.Now(), body); err != nil {
		t.Fatal(err)
	}
	script := `
import sys, json
from standardwebhooks import Webhook
secret, mid, ts, sig, body = sys.argv[1:6]
payload = Webhook(secret).verify(body, {"webhook-id": mid, "webhook-timestamp": ts, "webhook-signature": sig})
print(payload["id"])
`
	run := func(body string) (string, error) {
		cmd := exec.Command(py, "-c", script, secret, h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature"), body)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(dir, "python"))
		out, err := cmd.CombinedOutput()
		return string(bytes.TrimSpace(out)), err
	}
	if out, err := run(string(body)); err != nil || out != "evt_7" {
		t.Fatalf("python verify: %v\n%s", err, out)
	}
	if out, err := run(strings.Replace(string(body), "-7", "-8", 1)); err == nil {
		t.Fatalf("python verified a changed body: %s", out)
	}
}

// referenceLibrary is the directory of the standard-webhooks libraries
// module this build uses.
func referenceLibrary(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/standard-webhooks/standard-webhooks/libraries").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(dir, "python", "standardwebhooks", "webhooks.py")); err != nil {
		t.Fatalf("the reference Python library is not in the module: %v", err)
	}
	return dir
}
