package site_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/site"
)

// mirror is a download server behind a real HTTP proxy (nginx) that a
// customer reaches it through: the proxy answers a path from its own
// directory when it holds a file of that name, and passes everything
// else to wharf. A test writes files there to play a mirror, a corporate
// proxy or a man in the middle that serves old or forged answers; the
// vendor's key never leaves the vendor.
type mirror struct {
	url       string // the proxy: what customers and the install script use
	overrides string // files the proxy answers instead of wharf
	tr        *tree
}

func newMirror(t *testing.T) *mirror {
	t.Helper()
	testenv.Tool(t, "openssl")
	tr, _ := newDirTree(t)
	wharfURL, _ := serve(t, site.Config{Store: tr.store})
	m := &mirror{overrides: t.TempDir(), tr: tr}
	addr := testenv.FreeAddr(t)
	conf := fmt.Sprintf(`server {
    listen %[1]s;
    root %[2]s;
    location / { try_files $uri @wharf; }
    location = /channel {
        if (-f %[2]s/channel.gone) { return 404; }
        try_files $uri @wharf;
    }
    location @wharf {
        proxy_pass %[3]s;
        proxy_set_header Host $http_host;
    }
}
`, addr, m.overrides, wharfURL)
	p := testenv.NewNginx(t, addr, conf)
	m.url = p.URL()
	tr.baseURL = m.url
	tr.channelExpiry = time.Hour
	return m
}

// serveInstead makes the proxy answer path with body.
func (m *mirror) serveInstead(t *testing.T, path string, body []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(m.overrides, path), body, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(filepath.Join(m.overrides, path)) })
}

// serveMirrorFile makes the proxy answer path, which may be in a
// directory, with body.
func (m *mirror) serveMirrorFile(t *testing.T, path string, body []byte) {
	t.Helper()
	full := filepath.Join(m.overrides, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, body, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(full) })
}

// record is a channel record signed with the vendor's key, as one the
// vendor once published (the mirror kept it).
func (m *mirror) record(t *testing.T, c publish.Channel) []byte {
	t.Helper()
	s, err := publish.NewSigner(m.tr.priv)
	if err != nil {
		t.Fatal(err)
	}
	c.URL = m.url
	b, err := c.Sign(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawRecord signs body as a channel record of the tree as it is, with no
// check of what it says: a record the vendor's key signed by mistake.
func (m *mirror) rawRecord(body string) []byte {
	return []byte(body + "signature " + string(m.tr.signMetadata(publish.SignedChannel, publish.KeyChannel, []byte(body))) + "\n")
}

// oldScript makes the proxy answer /install with the script as the vendor
// published it when the channel record had sequence minSequence: a mirror
// keeps old scripts as well as old records.
func (m *mirror) oldScript(t *testing.T, minSequence uint64) {
	t.Helper()
	m.serveInstead(t, "install", renderInstall(t, m.url, string(m.tr.pubPEM), minSequence))
}

// machine is one customer machine: its HOME (the install script's state
// and ~/.local/bin) persists across install runs.
type machine struct {
	home  string
	shell string
}

func (mc machine) install(t *testing.T, url string, env ...string) installRun {
	t.Helper()
	path := filepath.Join(mc.home, ".local", "bin") + ":/usr/local/bin:/usr/bin:/bin"
	cmd := exec.Command(testenv.Tool(t, "dash"), "-c", `curl -fsSL "$URL/install" | `+mc.shell)
	cmd.Env = append([]string{"HOME=" + mc.home, "PATH=" + path, "URL=" + url}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return installRun{home: mc.home, stdout: stdout.String(), stderr: stderr.String(), err: err}
}

func (mc machine) installed(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(mc.home, ".local", "bin", "treasury")).Output()
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "treasury ")
}

// refused checks an install run failed with one line holding message and
// left the installed version as it was.
func (mc machine) refused(t *testing.T, r installRun, message, before string) {
	t.Helper()
	if r.err == nil {
		t.Fatalf("install succeeded, want a refusal %q\n%s", message, r.stdout)
	}
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "install: ") || !strings.Contains(lines[0], message) {
		t.Errorf("stderr = %q, want one line with %q", r.stderr, message)
	}
	if got := mc.installed(t); got != before {
		t.Errorf("installed version is %q, want %q unchanged", got, before)
	}
}

func (mc machine) ok(t *testing.T, r installRun, want string) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("install: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	if got := mc.installed(t); got != want {
		t.Errorf("installed %q, want %q\n%s%s", got, want, r.stdout, r.stderr)
	}
}

// TestInstallThroughMirror: a mirror in front of wharf can only answer
// old or forged channel records and pointers; the install script under
// dash, bash and busybox sh refuses each with one clear line, and an
// explicit version= still downgrades.
func TestInstallThroughMirror(t *testing.T) {
	m := newMirror(t)
	m.tr.publish("26.1.1")
	m.tr.publish("26.1.2")
	m.tr.publish("26.1.3-pre.4")
	now := time.Now().UTC().Truncate(time.Second)
	// Records the vendor signed once, which the mirror kept.
	old := m.record(t, publish.Channel{Sequence: 1, Issued: now.Add(-10 * time.Minute), Expires: now.Add(time.Hour), Latest: "26.1.1"})
	expired := m.record(t, publish.Channel{Sequence: 9, Issued: now.Add(-3 * time.Hour), Expires: now.Add(-2 * time.Hour), Latest: "26.1.2", Preview: "26.1.3-pre.4"})
	frozen := m.record(t, publish.Channel{Sequence: 1, Issued: now.AddDate(0, 0, -8), Expires: now.AddDate(0, 0, -1), Latest: "26.1.1"})
	s, err := publish.NewSigner(m.tr.priv)
	if err != nil {
		t.Fatal(err)
	}
	staging, err := publish.Channel{Sequence: 40, Issued: now, Expires: now.Add(time.Hour), URL: "https://staging.example.com", Latest: "26.1.1"}.Sign(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Hour)
	swapped := m.rawRecord(fmt.Sprintf("wharf-channel 2\nsequence 3\nissued %d %s\nexpires %d %s\nurl %s\nlatest 26.1.3-pre.4\npreview 26.1.2\n",
		now.Unix(), now.Format(time.RFC3339), later.Unix(), later.Format(time.RFC3339), m.url))

	for name, shell := range shells(t) {
		t.Run(name, func(t *testing.T) {
			fresh := func() machine { return machine{home: t.TempDir(), shell: shell} }
			t.Run("PointersIgnored", func(t *testing.T) {
				// The plain pointers rolled back and swapped: the script
				// never reads them.
				m.serveInstead(t, "latest", []byte("26.1.1\n"))
				m.serveInstead(t, "preview", []byte("26.1.2\n"))
				mc := fresh()
				mc.ok(t, mc.install(t, m.url), "26.1.2")
				mc.ok(t, mc.install(t, m.url, "version=preview"), "26.1.3-pre.4")
			})
			t.Run("ImageLines", func(t *testing.T) {
				// The record names the images' index digests after the
				// versions; the script reads past them, and refuses one
				// not of their form.
				imgs := []publish.ChannelImage{
					{Pointer: "latest", Name: "treasury-node", Index: "sha256:" + strings.Repeat("4f", 32)},
					{Pointer: "preview", Name: "treasury-node", Index: "sha256:" + strings.Repeat("9e", 32)},
				}
				m.serveInstead(t, "channel", m.record(t, publish.Channel{Sequence: 90, Issued: now, Expires: now.Add(time.Hour), Latest: "26.1.2", Preview: "26.1.3-pre.4", Images: imgs}))
				mc := fresh()
				mc.ok(t, mc.install(t, m.url), "26.1.2")
				mc.ok(t, mc.install(t, m.url, "version=preview"), "26.1.3-pre.4")
				m.serveInstead(t, "channel", m.rawRecord(fmt.Sprintf("wharf-channel 2\nsequence 91\nissued %d %s\nexpires %d %s\nurl %s\nlatest 26.1.2\nimage latest treasury-node sha256:$(id)\n",
					now.Unix(), now.Format(time.RFC3339), later.Unix(), later.Format(time.RFC3339), m.url)))
				mc.refused(t, mc.install(t, m.url), "the channel record is malformed (line 7 is not an image line)", "26.1.3-pre.4")
			})
			t.Run("ErrReplayOlderThanScript", func(t *testing.T) {
				// A fresh machine has seen no record: the script itself
				// carries the sequence it was published with.
				m.serveInstead(t, "channel", old)
				mc := fresh()
				mc.refused(t, mc.install(t, m.url), "sequence 1, older than 3 that this install script was published with", "")
			})
			t.Run("ErrReplayOfOlderRecord", func(t *testing.T) {
				mc := fresh()
				mc.ok(t, mc.install(t, m.url), "26.1.2") // sees sequence 3
				m.serveInstead(t, "channel", old)
				m.oldScript(t, 1)
				mc.refused(t, mc.install(t, m.url), "sequence 1, older than 3 already seen on this machine", "26.1.2")
			})
			t.Run("ErrRollbackOfInstalledBinary", func(t *testing.T) {
				// A machine that installed 26.1.2 by its version has seen
				// no record; the old one verifies, but would downgrade.
				mc := fresh()
				mc.ok(t, mc.install(t, m.url, "version=26.1.2"), "26.1.2")
				m.serveInstead(t, "channel", old)
				m.oldScript(t, 1)
				mc.refused(t, mc.install(t, m.url), "is 26.1.2, newer than 26.1.1 that latest names: not replacing it by an older version", "26.1.2")
			})
			t.Run("ExplicitDowngrade", func(t *testing.T) {
				mc := fresh()
				mc.ok(t, mc.install(t, m.url), "26.1.2")
				mc.ok(t, mc.install(t, m.url, "version=26.1.1"), "26.1.1")
				// and latest brings it forward again
				mc.ok(t, mc.install(t, m.url), "26.1.2")
			})
			t.Run("ErrPreviewSwap", func(t *testing.T) {
				m.serveInstead(t, "channel", swapped)
				mc := fresh()
				mc.refused(t, mc.install(t, m.url, "version=preview"), "the channel record is malformed (its latest is not a release version)", "")
				mc.refused(t, mc.install(t, m.url), "the channel record is malformed (its latest is not a release version)", "")
			})
			t.Run("ErrExpiredRecord", func(t *testing.T) {
				m.serveInstead(t, "channel", expired)
				mc := fresh()
				mc.refused(t, mc.install(t, m.url), "the channel record (sequence 9) expired at", "")
			})
			t.Run("ErrStaleFreeze", func(t *testing.T) {
				// The mirror froze on the record of 26.1.1, signed a week
				// ago: valid then, expired since.
				m.serveInstead(t, "channel", frozen)
				mc := fresh()
				mc.refused(t, mc.install(t, m.url), "serves a stale record", "")
			})
			t.Run("ErrOtherTree", func(t *testing.T) {
				// A record of the vendor's staging tree, signed with the
				// same key, with a higher sequence.
				m.serveInstead(t, "channel", staging)
				mc := fresh()
				mc.refused(t, mc.install(t, m.url), "the channel record is for https://staging.example.com, not "+m.url, "")
			})
			t.Run("ErrDownloadSignatureAsRecord", func(t *testing.T) {
				// The key signed, as a download, the bytes of a record
				// naming an old release with a huge sequence (an image
				// whose bytes they are): the record's signature is of
				// another context, so it does not verify, and the
				// machine still installs from the genuine record after.
				body := fmt.Sprintf("wharf-channel 2\nsequence 999999\nissued %d %s\nexpires %d %s\nurl %s\nlatest 26.1.1\n",
					now.Unix(), now.Format(time.RFC3339), later.Unix(), later.Format(time.RFC3339), m.url)
				m.serveInstead(t, "channel", []byte(body+"signature "+string(m.tr.sign([]byte(body)))+"\n"))
				mc := fresh()
				mc.refused(t, mc.install(t, m.url), "signature verification of the channel record FAILED", "")
				os.Remove(filepath.Join(m.overrides, "channel"))
				mc.ok(t, mc.install(t, m.url), "26.1.2")
			})
			t.Run("ErrDownloadSignatureAsSums", func(t *testing.T) {
				// The same for a SHA256SUMS listing an archive holding
				// another treasury, itself validly signed as a download.
				evil := binaryArchive(t, "treasury", "pwned")
				sums := fmt.Sprintf("%x  treasury-cli-26.1.2-linux-amd64.tar.gz\n", sha256.Sum256(evil))
				m.serveMirrorFile(t, "bin/26.1.2/SHA256SUMS", []byte(sums))
				m.serveMirrorFile(t, "bin/26.1.2/SHA256SUMS.sig", m.tr.sign([]byte(sums)))
				m.serveMirrorFile(t, "bin/26.1.2/treasury-cli-26.1.2-linux-amd64.tar.gz", evil)
				m.serveMirrorFile(t, "bin/26.1.2/treasury-cli-26.1.2-linux-amd64.tar.gz.sig", m.tr.sign(evil))
				for _, env := range [][]string{nil, {"version=26.1.2"}} {
					mc := fresh()
					mc.refused(t, mc.install(t, m.url, env...), "signature verification of SHA256SUMS of 26.1.2 FAILED", "")
				}
			})
			t.Run("SumsOfTwoSignatures", func(t *testing.T) {
				// While a publish replaces a SHA256SUMS its .sig holds the
				// new and the old bytes' signatures, one a line: one that
				// verifies is enough, in either order.
				genuine := m.tr.signMetadata(publish.SignedSums, "bin/26.1.2/SHA256SUMS", m.tr.stored("bin/26.1.2/SHA256SUMS"))
				other := m.tr.signMetadata(publish.SignedSums, "bin/26.1.2/SHA256SUMS", []byte("other bytes\n"))
				for _, sig := range [][]byte{append(append(other, '\n'), genuine...), append(append(genuine, '\n'), other...)} {
					m.serveMirrorFile(t, "bin/26.1.2/SHA256SUMS.sig", sig)
					mc := fresh()
					mc.ok(t, mc.install(t, m.url, "version=26.1.2"), "26.1.2")
				}
				m.serveMirrorFile(t, "bin/26.1.2/SHA256SUMS.sig", append(append(other, '\n'), other...))
				mc := fresh()
				mc.refused(t, mc.install(t, m.url, "version=26.1.2"), "signature verification of SHA256SUMS of 26.1.2 FAILED", "")
			})
			t.Run("ErrOtherTreeSums", func(t *testing.T) {
				// The staging tree's 26.1.2, built otherwise, signed by
				// the same key for its own URL.
				archive := binaryArchive(t, "treasury", "26.1.2 staging")
				sums := fmt.Sprintf("%x  treasury-cli-26.1.2-linux-amd64.tar.gz\n", sha256.Sum256(archive))
				m.serveMirrorFile(t, "bin/26.1.2/SHA256SUMS", []byte(sums))
				m.serveMirrorFile(t, "bin/26.1.2/SHA256SUMS.sig", signSumsFor(m.tr, "https://staging.example.com", "bin/26.1.2/SHA256SUMS", []byte(sums)))
				m.serveMirrorFile(t, "bin/26.1.2/treasury-cli-26.1.2-linux-amd64.tar.gz", archive)
				m.serveMirrorFile(t, "bin/26.1.2/treasury-cli-26.1.2-linux-amd64.tar.gz.sig", m.tr.sign(archive))
				for _, env := range [][]string{nil, {"version=26.1.2"}} {
					mc := fresh()
					mc.refused(t, mc.install(t, m.url, env...), "signature verification of SHA256SUMS of 26.1.2 FAILED", "")
				}
			})
			t.Run("ErrMissing", func(t *testing.T) {
				m.serveInstead(t, "channel.gone", nil)
				mc := fresh()
				mc.refused(t, mc.install(t, m.url), "no signed channel record at "+m.url+"/channel (HTTP 404)", "")
			})
			t.Run("ErrUnsigned", func(t *testing.T) {
				body := string(old[:bytes.LastIndex(old[:len(old)-1], []byte("\n"))+1])
				m.serveInstead(t, "channel", []byte(body))
				mc := fresh()
				mc.refused(t, mc.install(t, m.url), "is not signed", "")
			})
			t.Run("ErrMisSigned", func(t *testing.T) {
				forged := bytes.Replace(expired, []byte("latest 26.1.2"), []byte("latest 26.1.1"), 1)
				m.serveInstead(t, "channel", forged)
				mc := fresh()
				mc.refused(t, mc.install(t, m.url), "signature verification of the channel record FAILED", "")
			})
		})
	}
}
