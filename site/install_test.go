package site_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/templates"
)

func TestInstallScriptShellcheck(t *testing.T) {
	sc := testenv.Tool(t, "shellcheck")
	pub, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pem, _ := publish.PublicKeyPEM(&pub.PublicKey)
	script := filepath.Join(t.TempDir(), "install")
	writeFile(t, script, renderInstall(t, "https://dl.example.com", string(pem), 1))
	if out, err := exec.Command(sc, "--shell=sh", "--severity=style", script).CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}

// shells are the shells the install script must run under, each as the
// command that reads a script from stdin.
func shells(t *testing.T) map[string]string {
	return map[string]string{
		"dash":    testenv.Tool(t, "dash"),
		"bash":    testenv.Tool(t, "bash"),
		"busybox": testenv.Tool(t, "busybox") + " sh",
	}
}

// installRun is one run of `curl -fsSL $URL/install | sh` in a fresh HOME.
type installRun struct {
	home, stdout, stderr string
	err                  error
}

// runInstall pipes script (the server's /install when script is "") into
// shell with env, in a fresh HOME whose ~/.local/bin is on PATH when
// onPath, and with extra directories first on PATH.
func runInstall(t *testing.T, shell, url, script string, onPath bool, extraPath string, env ...string) installRun {
	t.Helper()
	home := t.TempDir()
	path := "/usr/local/bin:/usr/bin:/bin"
	if onPath {
		path = filepath.Join(home, ".local", "bin") + ":" + path
	}
	if extraPath != "" {
		path = extraPath + ":" + path
	}
	var cmd *exec.Cmd
	if script == "" {
		cmd = exec.Command(testenv.Tool(t, "dash"), "-c", `curl -fsSL "$URL/install" | `+shell)
	} else {
		cmd = exec.Command(testenv.Tool(t, "dash"), "-c", shell+" < \"$SCRIPT\"")
	}
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + path, "URL=" + url, "SCRIPT=" + script}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return installRun{home: home, stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// fakeTreasury puts a `treasury` on PATH whose `token create` prints some
// chatter and the token on its last line.
func fakeTreasury(t *testing.T, token string) string {
	t.Helper()
	dir := t.TempDir()
	body := "#!/bin/sh\n[ \"$1 $2\" = 'token create' ] || exit 2\necho 'Logged in as alice.'\necho 'Your access token, valid for one day:'\necho '" + token + "'\n"
	if err := os.WriteFile(filepath.Join(dir, "treasury"), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestInstallScript(t *testing.T) {
	e := newEnv(t)
	testenv.Tool(t, "openssl")
	for name, shell := range shells(t) {
		t.Run(name, func(t *testing.T) {
			t.Run("PublicIntoLocalBin", func(t *testing.T) {
				r := runInstall(t, shell, e.url, "", true, "")
				if r.err != nil {
					t.Fatalf("install: %v\n%s%s", r.err, r.stdout, r.stderr)
				}
				wantRun(t, filepath.Join(r.home, ".local", "bin", "treasury"), "treasury 26.1.2")
				if !strings.Contains(r.stdout, "installed treasury from treasury-cli-26.1.2-linux-amd64.tar.gz") {
					t.Errorf("stdout = %q", r.stdout)
				}
			})
			t.Run("ToVersion", func(t *testing.T) {
				to := filepath.Join(t.TempDir(), "opt bin")
				r := runInstall(t, shell, e.url, "", false, "", "to="+to, "version=26.1.1")
				if r.err != nil {
					t.Fatalf("install: %v\n%s%s", r.err, r.stdout, r.stderr)
				}
				wantRun(t, filepath.Join(to, "treasury"), "treasury 26.1.1")
				entries, _ := os.ReadDir(to)
				if len(entries) != 1 {
					t.Errorf("%s holds %d files, want only treasury", to, len(entries))
				}
			})
			t.Run("Preview", func(t *testing.T) {
				r := runInstall(t, shell, e.url, "", true, "", "version=preview")
				if r.err != nil {
					t.Fatalf("install: %v\n%s%s", r.err, r.stdout, r.stderr)
				}
				wantRun(t, filepath.Join(r.home, ".local", "bin", "treasury"), "treasury 26.1.3-pre.4")
			})
			t.Run("TokenFromTreasury", func(t *testing.T) {
				r := runInstall(t, shell, e.url, "", true, fakeTreasury(t, e.cr.alice), "binary=engine")
				if r.err != nil {
					t.Fatalf("install: %v\n%s%s", r.err, r.stdout, r.stderr)
				}
				wantRun(t, filepath.Join(r.home, ".local", "bin", "engine"), "engine 26.1.2")
			})
			t.Run("TokenFromEnv", func(t *testing.T) {
				r := runInstall(t, shell, e.url, "", true, "", "binary=signer", "token="+e.cr.bob)
				if r.err != nil {
					t.Fatalf("install: %v\n%s%s", r.err, r.stdout, r.stderr)
				}
				wantRun(t, filepath.Join(r.home, ".local", "bin", "signer"), "signer 26.1.2")
			})
			t.Run("APIKey", func(t *testing.T) {
				r := runInstall(t, shell, e.url, "", true, "", "binary=treasury-api", "api_key="+e.cr.basicKey)
				if r.err != nil {
					t.Fatalf("install: %v\n%s%s", r.err, r.stdout, r.stderr)
				}
				wantRun(t, filepath.Join(r.home, ".local", "bin", "treasury-api"), "treasury-api 26.1.2")
			})

			bad := []struct {
				name    string
				env     []string
				treas   string // token printed by a fake treasury, "" for none
				message string
			}{
				{"ErrNoCredentials", []string{"binary=engine"}, "", "engine needs authentication"},
				{"ErrExpiredOrWrongToken", []string{"binary=engine", "token=" + e.cr.carol}, "", "authentication failed (HTTP 401)"},
				{"ErrWrongKey", []string{"binary=cord", "api_key=wk_wrong"}, "", "authentication failed (HTTP 401)"},
				{"ErrExpiredToken", []string{"binary=engine", "token=" + e.cr.expired}, "", "authentication failed (HTTP 401): the access token expired at " + e.cr.expiredAt.UTC().Format(time.RFC3339) + " (access tokens last 24 hours): get a new one"},
				{"ErrBadTokenFromTreasury", []string{"binary=engine"}, "garbage", "the last line of `treasury token create` is not a token: set token=... or api_key=..."},
				{"ErrDemoTreasuryBanner", []string{"binary=engine"}, "treasury (demo build linux-amd64)", "the last line of `treasury token create` is not a token"},
				{"ErrNoLevel", []string{"binary=engine", "token=" + e.cr.loneUser}, "", "permission level"},
				{"ErrUnknownBinary", []string{"binary=treasury-node"}, "", "unknown binary 'treasury-node'"},
				{"ErrMalformedVersion", []string{"version=1.2"}, "", "malformed version '1.2'"},
				{"ErrUnknownVersion", []string{"version=26.9.9"}, "", "not found for x86 in version 26.9.9 (HTTP 404)"},
			}
			for _, tt := range bad {
				t.Run(tt.name, func(t *testing.T) {
					extra := ""
					if tt.treas != "" {
						extra = fakeTreasury(t, tt.treas)
					}
					r := runInstall(t, shell, e.url, "", true, extra, tt.env...)
					wantFailure(t, r, tt.message)
				})
			}
			t.Run("ErrDemoTreasury", func(t *testing.T) {
				// make run's demo treasury follows the real one's
				// contract: token create fails, printing nothing on stdout.
				inputs := t.TempDir()
				if out, err := exec.Command("../scripts/demo-inputs.sh", inputs).CombinedOutput(); err != nil {
					t.Fatalf("demo-inputs.sh: %v\n%s", err, out)
				}
				dir := t.TempDir()
				b, err := os.ReadFile(filepath.Join(inputs, "treasury-cli-linux-amd64"))
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(dir, "treasury"), b)
				if err := os.Chmod(filepath.Join(dir, "treasury"), 0o755); err != nil {
					t.Fatal(err)
				}
				wantFailure(t, runInstall(t, shell, e.url, "", true, dir, "binary=engine"), "engine needs authentication: set token=")
			})
			t.Run("ErrServerDown", func(t *testing.T) {
				script := filepath.Join(t.TempDir(), "install")
				writeFile(t, script, renderInstall(t, "http://"+testenv.FreeAddr(t), string(e.tr.pubPEM), 1))
				wantFailure(t, runInstall(t, shell, e.url, script, true, ""), "cannot download")
			})
			t.Run("ErrSignature", func(t *testing.T) {
				// A script pinning another key refuses what this server serves.
				other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
				pem, _ := publish.PublicKeyPEM(&other.PublicKey)
				script := filepath.Join(t.TempDir(), "install")
				writeFile(t, script, renderInstall(t, e.url, string(pem), 1))
				wantFailure(t, runInstall(t, shell, e.url, script, true, ""), "signature verification of the channel record FAILED")
				// An explicit version needs no channel record; its
				// SHA256SUMS is refused the same way.
				wantFailure(t, runInstall(t, shell, e.url, script, true, "", "version=26.1.2"), "signature verification of SHA256SUMS of 26.1.2 FAILED")
			})
			t.Run("Truncated", func(t *testing.T) {
				full := renderInstall(t, e.url, string(e.tr.pubPEM), 1)
				for _, cut := range []int{len(full) / 3, len(full) / 2, len(full) - len("wharf_install \"$@\"\n") - 2} {
					script := filepath.Join(t.TempDir(), "install")
					writeFile(t, script, full[:cut])
					r := runInstall(t, shell, e.url, script, true, "")
					if entries, _ := os.ReadDir(filepath.Join(r.home, ".local", "bin")); len(entries) != 0 {
						t.Errorf("cut at %d: installed %v", cut, entries)
					}
					if strings.Contains(r.stdout+r.stderr, "installed") {
						t.Errorf("cut at %d: ran: %s%s", cut, r.stdout, r.stderr)
					}
				}
			})
		})
	}
}

// TestInstallScriptTamperedDownload: an archive that does not match its
// signature is refused before it is unpacked.
func TestInstallScriptTamperedDownload(t *testing.T) {
	e := newEnv(t)
	k := key(t, "26.1.2", "treasury-cli", "x86")
	e.tr.put(k, binaryArchive(t, "treasury", "evil"))
	for name, shell := range shells(t) {
		t.Run(name, func(t *testing.T) {
			wantFailure(t, runInstall(t, shell, e.url, "", true, ""), "signature verification")
		})
	}
}

func wantRun(t *testing.T, exe, want string) {
	t.Helper()
	out, err := exec.Command(exe).Output()
	if err != nil {
		t.Fatalf("run %s: %v", exe, err)
	}
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("%s printed %q, want %q", exe, got, want)
	}
}

// wantFailure checks a run failed with one line naming the problem and
// left nothing in ~/.local/bin.
func wantFailure(t *testing.T, r installRun, message string) {
	t.Helper()
	if r.err == nil {
		t.Fatalf("install succeeded, want a failure %q\n%s", message, r.stdout)
	}
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "install: ") || !strings.Contains(lines[0], message) {
		t.Errorf("stderr = %q, want one line with %q", r.stderr, message)
	}
	if entries, _ := os.ReadDir(filepath.Join(r.home, ".local", "bin")); len(entries) != 0 {
		t.Errorf("left files in the target: %v", entries)
	}
}

// TestInstallScriptSystemDirNotWritable: without ~/.local/bin on PATH the
// script installs into /usr/local/bin; a user who cannot write there and
// has no sudo gets one clear line, and nothing is left behind.
func TestInstallScriptSystemDirNotWritable(t *testing.T) {
	var notRoot error
	if os.Geteuid() != 0 {
		notRoot = errors.New("running the script as another user needs root")
	}
	testenv.Need(t, "root", notRoot)
	runuser := testenv.Tool(t, "runuser")
	dash := testenv.Tool(t, "dash")
	if _, err := os.Stat("/usr/local/bin/treasury"); err == nil {
		testenv.Need(t, "a machine without /usr/local/bin/treasury", errors.New("it exists"))
	}
	e := newEnv(t)
	home, err := os.MkdirTemp("", "wharf-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	os.Chmod(home, 0o777)
	cmd := exec.Command(runuser, "-u", "nobody", "--", dash, "-c", `curl -fsSL "$URL/install" | sh`)
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "URL=" + e.url}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r := installRun{home: home, err: cmd.Run(), stdout: stdout.String(), stderr: stderr.String()}
	wantFailure(t, r, "cannot write to /usr/local/bin")
	if matches, _ := filepath.Glob("/usr/local/bin/*treasury*"); len(matches) != 0 {
		t.Errorf("left %v", matches)
	}
}

// TestInstallScriptCredentialInjection: a token or API key is written into
// curl's config inside a quoted string; one holding a quote, a backslash
// or a newline could add curl options (write a file, send one elsewhere)
// before any signature is checked. Such a credential is refused.
func TestInstallScriptCredentialInjection(t *testing.T) {
	e := newEnv(t)
	testenv.Tool(t, "openssl")
	for name, shell := range shells(t) {
		t.Run(name, func(t *testing.T) {
			pwned := filepath.Join(t.TempDir(), "pwned")
			inject := "x\"\noutput = \"" + pwned + "\"\nurl = \"" + e.url + "/latest\"\nheader = \"X: y"
			tests := []struct{ name, env string }{
				{"TokenQuoteNewline", "token=" + inject},
				{"APIKeyQuoteNewline", "api_key=" + inject},
				{"APIKeyQuote", "api_key=wk_a\"b"},
				{"TokenBackslash", "token=" + e.cr.bob + "\\"},
				{"TokenSpace", "token=a b"},
				{"TokenTab", "token=a\tb"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					r := runInstall(t, shell, e.url, "", true, "", "binary=engine", tt.env)
					wantFailure(t, r, "holds a character no token or API key has")
					if _, err := os.Stat(pwned); err == nil {
						t.Fatalf("the credential made curl write %s", pwned)
					}
				})
			}
		})
	}
}

// TestInstallScriptWrongArchive: a mirror that answers with another
// validly signed archive (an older release, another platform's build)
// for the one the script resolved is refused: the archive must be the one
// the signed SHA256SUMS of that version lists under its canonical name.
func TestInstallScriptWrongArchive(t *testing.T) {
	testenv.Tool(t, "openssl")
	tests := []struct {
		name   string
		tamper func(e *env)
	}{
		{"OlderRelease", func(e *env) {
			old := key(t, "26.1.1", "treasury-cli", "x86")
			k := key(t, "26.1.2", "treasury-cli", "x86")
			e.tr.put(k, e.tr.files[old])
			e.tr.put(publish.SigKey(k), e.tr.sign(e.tr.files[old]))
		}},
		{"OtherPlatform", func(e *env) {
			// The arm build differs from the x86 one, and SHA256SUMS says so.
			arm := key(t, "26.1.2", "treasury-cli", "arm")
			e.tr.files[arm] = binaryArchive(t, "treasury", "26.1.2 for arm")
			e.tr.put(arm, e.tr.files[arm])
			e.tr.put(publish.SigKey(arm), e.tr.sign(e.tr.files[arm]))
			var sums strings.Builder
			keys := make([]string, 0)
			for k := range e.tr.files {
				if strings.HasPrefix(k, "bin/26.1.2/") {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			for _, k := range keys {
				fmt.Fprintf(&sums, "%x  %s\n", sha256.Sum256(e.tr.files[k]), path.Base(k))
			}
			sk := "bin/26.1.2/SHA256SUMS"
			e.tr.put(sk, []byte(sums.String()))
			e.tr.put(publish.SigKey(sk), e.tr.signMetadata(publish.SignedSums, sk, []byte(sums.String())))
			x86 := key(t, "26.1.2", "treasury-cli", "x86")
			e.tr.put(x86, e.tr.files[arm])
			e.tr.put(publish.SigKey(x86), e.tr.sign(e.tr.files[arm]))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tt.tamper(e)
			for name, shell := range shells(t) {
				t.Run(name, func(t *testing.T) {
					wantFailure(t, runInstall(t, shell, e.url, "", true, ""), "the download is not treasury-cli-26.1.2-linux-amd64.tar.gz of version 26.1.2")
				})
			}
		})
	}
	t.Run("TamperedSums", func(t *testing.T) {
		e := newEnv(t)
		e.tr.put("bin/26.1.2/SHA256SUMS", []byte("0000  treasury-cli-26.1.2-linux-amd64.tar.gz\n"))
		for name, shell := range shells(t) {
			t.Run(name, func(t *testing.T) {
				wantFailure(t, runInstall(t, shell, e.url, "", true, ""), "signature verification of SHA256SUMS of 26.1.2 FAILED")
			})
		}
	})
}

// TestInstallScriptQuotesOperatorInput: the base URL and the executable
// names are operator input; the publisher refuses unsafe ones, and the
// template quotes them anyway, so the script never runs what they hold.
func TestInstallScriptQuotesOperatorInput(t *testing.T) {
	tmpl, err := templates.Text(templates.Install)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pem, _ := publish.PublicKeyPEM(&pub.PublicKey)
	for name, shell := range shells(t) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			pwned := filepath.Join(dir, "pwned")
			data := templates.InstallData{
				BaseURL:   "http://" + testenv.FreeAddr(t) + "/'$(touch " + pwned + ")'",
				PublicKey: string(pem),
				Binaries: []templates.InstallBinary{
					{Name: "treasury-cli", Executable: "x'; touch " + pwned + "; '", Access: "public"},
				},
			}
			var buf bytes.Buffer
			if err := tmpl.Execute(&buf, data); err != nil {
				t.Fatal(err)
			}
			script := filepath.Join(dir, "install")
			writeFile(t, script, buf.Bytes())
			r := runInstall(t, shell, "", script, true, "")
			if r.err == nil {
				t.Errorf("install succeeded against a closed port")
			}
			if _, err := os.Stat(pwned); err == nil {
				t.Fatalf("the script ran operator input:\n%s", r.stderr)
			}
		})
	}
}
