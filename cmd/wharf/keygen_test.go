package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/internal/testenv"
)

// pubRun runs the CLI in-process and returns what it printed.
func pubRun(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = newApp(&out, &errOut).Run(append([]string{"wharf"}, args...))
	return out.String(), errOut.String(), err
}

// mustRun runs a wharf command in-process and returns its output, failing
// the test if it fails.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := pubRun(t, args...)
	if err != nil {
		t.Fatalf("wharf %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

func TestKeygen(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "dl.key")
	if _, _, err := pubRun(t, "keygen", "--out", key); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(key)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("dl.key mode = %v, want 0600", st.Mode().Perm())
	}
	pub, err := os.ReadFile(filepath.Join(dir, "dl.pub"))
	if err != nil || !strings.HasPrefix(string(pub), "-----BEGIN PUBLIC KEY-----") {
		t.Fatalf("dl.pub = %q, %v", pub, err)
	}
	// openssl agrees that the pair is a P-256 key pair.
	openssl := testenv.Tool(t, "openssl")
	out, err := exec.Command(openssl, "pkey", "-in", key, "-pubout").Output()
	if err != nil || string(out) != string(pub) {
		t.Errorf("openssl pkey -pubout = %q, %v; dl.pub = %q", out, err, pub)
	}
	text, _ := exec.Command(openssl, "pkey", "-in", key, "-noout", "-text").Output()
	if !strings.Contains(string(text), "P-256") {
		t.Errorf("openssl does not see a P-256 key:\n%s", text)
	}

	if _, _, err := pubRun(t, "keygen", "--out", key); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("keygen over an existing key = %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "dl.pub")); string(b) != string(pub) {
		t.Error("a refused keygen changed dl.pub")
	}
	if _, _, err := pubRun(t, "keygen", "--out", key, "--force"); err != nil {
		t.Errorf("keygen --force: %v", err)
	}
}

func TestVerify(t *testing.T) {
	openssl := testenv.Tool(t, "openssl")
	dir := t.TempDir()
	key := filepath.Join(dir, "dl.key")
	pub := filepath.Join(dir, "dl.pub")
	if _, _, err := pubRun(t, "keygen", "--out", key); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "engine.tar.gz")
	os.WriteFile(file, []byte("an archive"), 0o644)
	// Signed by openssl, independent of our signer.
	der, err := exec.Command(openssl, "dgst", "-sha256", "-sign", key, file).Output()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(openssl, "base64", "-A")
	cmd.Stdin = bytes.NewReader(der)
	sig, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(file+".sig", sig, 0o644)
	os.WriteFile(filepath.Join(dir, "other.sig"), sig, 0o644)
	tampered := filepath.Join(dir, "tampered")
	os.WriteFile(tampered, []byte("an archivE"), 0o644)
	os.WriteFile(tampered+".sig", sig, 0o644)
	_, otherPub, _ := func() (string, string, error) {
		k := filepath.Join(t.TempDir(), "other.key")
		_, _, err := pubRun(t, "keygen", "--out", k)
		return k, strings.TrimSuffix(k, ".key") + ".pub", err
	}()

	os.WriteFile(filepath.Join(dir, "garbage.sig"), []byte("not base64!"), 0o644)
	// The signature base64-decoded, as openssl's -signature takes it.
	os.WriteFile(filepath.Join(dir, "der.sig"), der, 0o644)
	os.WriteFile(tampered+".der", der, 0o644)
	// Exit codes: 1 an invalid signature, 2 usage or I/O errors.
	tests := []struct {
		name    string
		args    []string
		wantErr string
		code    int
	}{
		{"OK", []string{"--key", pub, file}, "", 0},
		{"ExplicitSig", []string{"--key", pub, file, filepath.Join(dir, "other.sig")}, "", 0},
		{"Tampered", []string{"--key", pub, tampered}, "INVALID", 1},
		{"OtherKey", []string{"--key", otherPub, file}, "INVALID", 1},
		{"GarbageSig", []string{"--key", pub, file, filepath.Join(dir, "garbage.sig")}, "INVALID", 1},
		{"DERSig", []string{"--key", pub, file, filepath.Join(dir, "der.sig")}, "", 0},
		{"DERSigTampered", []string{"--key", pub, tampered, tampered + ".der"}, "INVALID", 1},
		{"MissingSig", []string{"--key", pub, file, filepath.Join(dir, "none.sig")}, "no such file", 2},
		{"MissingFile", []string{"--key", pub, filepath.Join(dir, "none")}, "no such file", 2},
		{"MissingKey", []string{"--key", filepath.Join(dir, "none.pub"), file}, "no such file", 2},
		{"PrivateKeyAsKey", []string{"--key", key, file}, "not a public key", 2},
		{"NoArgs", []string{"--key", pub}, "want FILE [SIG]", 2},
		{"UnknownFlag", []string{"--kye", pub, file}, "unknown flag --kye: did you mean --key?", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := pubRun(t, append([]string{"verify"}, tt.args...)...)
			if tt.wantErr == "" {
				if err != nil || !strings.Contains(out, "signature OK") {
					t.Fatalf("verify = %q, %v; want OK", out, err)
				}
				if der := strings.Contains(out, "DER: base64-decoded already"); der != (tt.name == "DERSig") {
					t.Errorf("verify = %q: says DER %v", out, der)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("verify = %v, want an error mentioning %q", err, tt.wantErr)
			}
			if got := shell.ExitCode(err); got != tt.code {
				t.Errorf("exit code %d, want %d", got, tt.code)
			}
		})
	}
}

// TestUnknownCommand: an unknown command or subcommand fails with exit 2
// and the list of commands, not "No help topic"; --version prints the
// module version and commit.
func TestUnknownCommand(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, "keygen, init, check, publish, verify, serve, org, user, apikey, token, hosting, channel"},
		{[]string{"org", "bogus"}, "the commands of wharf org are: create, set-level, list"},
		{[]string{"apikey", "bogus"}, "the commands of wharf apikey are: create, revoke, list"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, stderr, err := pubRun(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), `unknown command "bogus"`) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want the command list %q", err, tt.want)
			}
			if strings.Contains(stderr, "No help topic") {
				t.Errorf("stderr = %q", stderr)
			}
			if got := shell.ExitCode(err); got != 2 {
				t.Errorf("exit code %d, want 2", got)
			}
		})
	}
	out, _, err := pubRun(t, "--version")
	if err != nil || !strings.HasPrefix(out, "wharf version ") || !strings.Contains(out, "commit") {
		t.Errorf("--version = %q, %v", out, err)
	}
}
