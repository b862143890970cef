package publish_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	_ "github.com/wharfhq/wharf/publish/kms"
)

func TestSignOpenSSL(t *testing.T) {
	s, pubPath := testSigner(t)
	pubPEM, err := os.ReadFile(pubPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := pubPEMOf(t, s); string(got) != string(pubPEM) {
		t.Fatalf("Signer.PublicKey = %s, dl.pub = %s", got, pubPEM)
	}
	for _, content := range []string{"", "hello\n", strings.Repeat("wharf", 100000)} {
		sum := sha256.Sum256([]byte(content))
		der, err := s.SignDigest(context.Background(), sum[:])
		if err != nil {
			t.Fatal(err)
		}
		sig := publish.SignatureText(der)
		opensslVerify(t, pubPEM, []byte(content), sig)

		pub, err := publish.ParsePublicKeyPEM(pubPEM)
		if err != nil {
			t.Fatal(err)
		}
		if err := publish.Verify(pub, strings.NewReader(content), append(sig, '\n')); err != nil {
			t.Errorf("Verify(valid signature) = %v", err)
		}
		if err := publish.Verify(pub, strings.NewReader(content+"x"), sig); !errors.Is(err, publish.ErrBadSignature) {
			t.Errorf("Verify(other content) = %v, want ErrBadSignature", err)
		}
		if err := publish.Verify(pub, strings.NewReader(content), []byte("not base64!")); !errors.Is(err, publish.ErrBadSignature) {
			t.Errorf("Verify(garbage signature) = %v, want ErrBadSignature", err)
		}
	}
	if _, err := s.SignDigest(context.Background(), []byte("short")); err == nil {
		t.Error("SignDigest accepted a digest that is not SHA-256")
	}
}

// TestSignOpenSSLKey signs with a key openssl made, in both PEM forms.
func TestSignOpenSSLKey(t *testing.T) {
	openssl := testenv.Tool(t, "openssl")
	dir := t.TempDir()
	for _, tt := range []struct{ name, args string }{
		{"SEC1", "ecparam -name prime256v1 -genkey -noout"},
		{"PKCS8", "genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key := filepath.Join(dir, tt.name+".key")
			run(t, openssl, append(strings.Fields(tt.args), "-out", key)...)
			pub := filepath.Join(dir, tt.name+".pub")
			run(t, openssl, "ec", "-in", key, "-pubout", "-out", pub)
			s, err := publish.LoadSigner(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte("x"))
			der, err := s.SignDigest(context.Background(), sum[:])
			if err != nil {
				t.Fatal(err)
			}
			pubPEM, _ := os.ReadFile(pub)
			opensslVerify(t, pubPEM, []byte("x"), publish.SignatureText(der))
		})
	}
}

func TestLoadSignerRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pkcs8 := func(key any) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	_, pubPEM, _ := publish.GenerateKey()

	tests := []struct {
		name, keyref, want string
	}{
		{"Missing", filepath.Join(dir, "nope.key"), "no such file"},
		{"Unreadable", dir, "is a directory"},
		{"Garbage", write("garbage", []byte("not a key at all\n")), "not a PEM file"},
		{"RSAPKCS1", write("rsa1", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)})), "RSA private key"},
		{"RSAPKCS8", write("rsa8", pkcs8(rsaKey)), "RSA private key"},
		{"Ed25519", write("ed", pkcs8(edKey)), "Ed25519 private key"},
		{"P384", write("p384", pkcs8(p384)), "P-384"},
		{"PublicKey", write("pub", pubPEM), "a public key"},
		{"Encrypted", write("enc", pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED SIGSTORE PRIVATE KEY", Bytes: []byte("x")})), "encrypted"},
		{"BrokenDER", write("broken", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("x")})), "parse private key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := publish.LoadSigner(context.Background(), tt.keyref)
			if err == nil {
				t.Fatalf("LoadSigner(%s) = %v, want an error", tt.name, s)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadSigner error = %q, want it to mention %q", err, tt.want)
			}
		})
	}
}

// TestLoadSignerKMS reaches no KMS: none is reachable from here. It proves
// the KMS path is wired (the URI goes to sigstore's provider, not to the
// file system) up to the failing connection to a closed loopback port.
func TestLoadSignerKMS(t *testing.T) {
	port := testenv.FreeAddr(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("VAULT_ADDR", "http://"+port)
	t.Setenv("VAULT_TOKEN", "test")
	tests := []struct{ name, keyref string }{
		{"AWS", "awskms://" + port + "/alias/wharf"},
		{"Vault", "hashivault://wharf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !publish.IsKMS(tt.keyref) {
				t.Fatalf("IsKMS(%q) = false", tt.keyref)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := publish.LoadSigner(ctx, tt.keyref)
			if err == nil {
				t.Fatal("LoadSigner reached a KMS on a closed port")
			}
			if errors.Is(err, os.ErrNotExist) || strings.Contains(err.Error(), "no KMS provider") {
				t.Fatalf("LoadSigner did not hand the URI to its KMS provider: %v", err)
			}
			t.Logf("failed as expected, at the connection: %v", err)
		})
	}
}
