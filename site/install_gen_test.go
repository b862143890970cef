package site_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
)

// installCase is one hostile answer of a mirror: files it serves instead
// of the vendor's, and what an install of latest and of version=26.1.2
// may do through it.
type installCase struct {
	name  string
	files map[string][]byte // path -> body the mirror answers
	// stateful: the machine installed latest through the genuine tree
	// first (it has seen the current record).
	stateful bool
	// refuse: the script must refuse (a malformed record or SHA256SUMS
	// that the Go parser refuses).
	refuseLatest, refuseVersion bool
	// exact: the script must also accept what the Go parser accepts.
	exact bool
}

// TestInstallScriptGenerated: a seeded generator of what a mirror can
// answer the install script (records, SHA256SUMS and archives signed by
// the vendor's key for other purposes, another tree's, old ones, and
// malformed ones the key signed by mistake), run under dash, bash and
// busybox sh, against one invariant: the script installs the genuine
// archive of the version it was asked for (latest: the one the current
// record names) or refuses; it never installs another archive, never an
// older version for latest, accepts a malformed record or SHA256SUMS only
// where the Go parser does, and a machine it ran on still installs from
// the genuine tree afterwards. WHARF_INSTALL_CASES sets the number of
// cases (make fuzz runs more).
func TestInstallScriptGenerated(t *testing.T) {
	m := newMirror(t)
	m.tr.publish("26.1.1")
	m.tr.publish("26.1.2")
	rng := testenv.Rand(t, 1)
	n := 9
	if s := os.Getenv("WHARF_INSTALL_CASES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	g := &installGen{m: m, rng: rng, now: time.Now().UTC().Truncate(time.Second)}
	sh := shells(t)
	names := []string{"dash", "bash", "busybox"}
	violations := 0
	for i := range n {
		c := g.next(t)
		name := names[i%len(names)] // each shell in turn
		violations += g.run(t, fmt.Sprintf("case %d %s %s", i, c.name, name), c, sh[name])
	}
	if violations > 0 {
		t.Fatalf("%d violations in %d cases", violations, n)
	}
	t.Logf("%d cases, the three shells in turn, no violation", n)
}

// installGen makes hostile mirror answers against the tree of m.
type installGen struct {
	m   *mirror
	rng *rand.Rand
	now time.Time
}

const (
	genVersion = "26.1.2" // the current release: what latest must give
	genName    = "treasury-cli-26.1.2-linux-amd64.tar.gz"
	genSums    = "bin/26.1.2/SHA256SUMS"
)

func (g *installGen) next(t *testing.T) installCase {
	t.Helper()
	attacks := []func(*testing.T) installCase{g.artifactAsMetadata, g.metadataAsArchive, g.otherTree, g.oldRecord, g.malformedRecord, g.malformedSums}
	c := attacks[g.rng.IntN(len(attacks))](t)
	c.stateful = g.rng.IntN(2) == 0
	return c
}

// evil is an archive holding a treasury that is no release's, signed by
// the vendor's key as a download: a ready archive of another artifact.
func (g *installGen) evil() (archive, sig []byte) {
	archive = binaryArchive(g.m.tr.tb, "treasury", "pwned")
	return archive, g.m.tr.sign(archive)
}

// artifactAsMetadata: the vendor published, as a download, bytes an
// attacker chose (an image whose first entry's name is a record): the
// bytes a verifier checks for a channel record naming an old release or
// a huge sequence, and for a SHA256SUMS listing the evil archive under
// the public CLI's name. Publish signs them only if it takes them.
func (g *installGen) artifactAsMetadata(t *testing.T) installCase {
	t.Helper()
	c := installCase{name: "ArtifactAsMetadata", files: map[string][]byte{}}
	archive, asig := g.evil()
	if g.rng.IntN(3) > 0 {
		seq := uint64(2 + g.rng.IntN(1e6))
		latest := []string{"26.1.1", "26.1.2"}[g.rng.IntN(2)]
		body := fmt.Sprintf("%s\nsequence %d\nissued %d %s\nexpires %d %s\nurl %s\nlatest %s\n", recordMagic,
			seq, g.now.Unix(), g.now.Format(time.RFC3339), g.now.Add(time.Hour).Unix(), g.now.Add(time.Hour).Format(time.RFC3339), g.m.url, latest)
		if signed := recordSignedBytes(g.m.url, []byte(body)); publishSignsArtifact(signed) {
			c.files["channel"] = []byte(body + "signature " + string(g.m.tr.sign(signed)) + "\n")
		}
	}
	sums := fmt.Sprintf("%x  %s\n", sha256.Sum256(archive), genName)
	if signed := sumsSignedBytes(g.m.url+"/"+genSums, []byte(sums)); publishSignsArtifact(signed) {
		c.files[genSums] = []byte(sums)
		c.files[genSums+".sig"] = g.m.tr.sign(signed)
		c.files["bin/26.1.2/"+genName] = archive
		c.files["bin/26.1.2/"+genName+".sig"] = asig
	}
	return c
}

// metadataAsArchive: the archive answered is the bytes the genuine
// SHA256SUMS signature covers, with that signature as its .sig: a valid
// signature of those bytes, which must still not pass for a download.
func (g *installGen) metadataAsArchive(t *testing.T) installCase {
	t.Helper()
	sums, sig := g.stored(t, genSums), g.stored(t, genSums+".sig")
	return installCase{name: "MetadataAsArchive", files: map[string][]byte{
		"bin/26.1.2/" + genName:          sumsSignedBytes(g.m.url+"/"+genSums, sums),
		"bin/26.1.2/" + genName + ".sig": sig,
	}}
}

// stored is the genuine tree's object at key.
func (g *installGen) stored(t *testing.T, key string) []byte {
	t.Helper()
	return g.m.tr.stored(key)
}

// otherTree: the vendor's staging tree, signed by the same key, built
// 26.1.2 differently; the mirror answers its SHA256SUMS, archive and
// record.
func (g *installGen) otherTree(t *testing.T) installCase {
	t.Helper()
	staging := "https://staging.example.com"
	archive := binaryArchive(t, "treasury", "26.1.2 staging")
	sums := fmt.Sprintf("%x  %s\n", sha256.Sum256(archive), genName)
	c := installCase{name: "OtherTree", files: map[string][]byte{
		genSums:                          []byte(sums),
		genSums + ".sig":                 signSumsFor(g.m.tr, staging, genSums, []byte(sums)),
		"bin/26.1.2/" + genName:          archive,
		"bin/26.1.2/" + genName + ".sig": g.m.tr.sign(archive),
	}}
	if g.rng.IntN(2) == 0 {
		s, err := publish.NewSigner(g.m.tr.priv)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := publish.Channel{Sequence: 50, Issued: g.now, Expires: g.now.Add(time.Hour), URL: staging, Latest: "26.1.2"}.Sign(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		c.files["channel"] = rec
	}
	return c
}

// oldRecord: a record the vendor signed once (sequence 1, naming 26.1.1),
// still within its expiry, replayed to a machine.
func (g *installGen) oldRecord(t *testing.T) installCase {
	t.Helper()
	c := publish.Channel{Sequence: 1, Issued: g.now.Add(-time.Duration(1+g.rng.IntN(100)) * time.Minute), Latest: "26.1.1"}
	c.Expires = g.now.Add(time.Duration(1+g.rng.IntN(1000)) * time.Hour)
	return installCase{name: "OldRecord", files: map[string][]byte{"channel": g.m.record(t, c)}}
}

// mutate edits lines: one random edit of the kinds a lenient parser
// lets through.
func (g *installGen) mutate(lines []string) []string {
	lines = append([]string(nil), lines...)
	i := g.rng.IntN(len(lines))
	switch g.rng.IntN(9) {
	case 0:
		lines[i] += "\x00"
	case 1:
		lines[i] += "\r"
	case 2:
		lines = append(lines[:i+1], lines[i:]...) // a line twice
	case 3:
		j := g.rng.IntN(len(lines))
		lines[i], lines[j] = lines[j], lines[i]
	case 4:
		lines = append(lines[:i], append([]string{"mirror yes"}, lines[i:]...)...)
	case 5:
		lines[i] += " "
	case 6:
		lines[i] = strings.Replace(lines[i], " ", "  ", 1)
	case 7:
		lines[i] = strings.Replace(lines[i], " ", " *", 1)
	case 8:
		lines = append(lines[:i], lines[i+1:]...)
	}
	return lines
}

// malformedRecord: the current record with one edit, signed properly by
// the vendor's key (by mistake): the script must take it exactly when
// the Go parser does.
func (g *installGen) malformedRecord(t *testing.T) installCase {
	t.Helper()
	cur, _, _, err := publish.ParseChannel(g.stored(t, publish.KeyChannel))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(cur.Body()), "\n"), "\n")
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\n")
	}
	body := strings.Join(g.mutate(lines), "\n") + "\n"
	rec := []byte(body + "signature " + string(signRecordFor(g.m.tr, g.m.url, []byte(body))) + "\n")
	s, err := publish.NewSigner(g.m.tr.priv)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := s.PublicKey(context.Background())
	got, err := publish.VerifyChannel(pub, rec, g.now)
	ok := err == nil && got.URL == g.m.url && got.Latest == genVersion
	return installCase{name: "MalformedRecord", files: map[string][]byte{"channel": rec}, refuseLatest: !ok, exact: true}
}

// sumsLine is the exact form of a SHA256SUMS line.
var sumsLine = regexp.MustCompile(`^[0-9a-f]{64}  [A-Za-z0-9._+-]+$`)

// sumsWellFormed is the specification's form of a SHA256SUMS: every line
// of the exact form, names in increasing order, a final newline.
func sumsWellFormed(b string) bool {
	if b == "" || !strings.HasSuffix(b, "\n") {
		return false
	}
	prev := ""
	for _, l := range strings.Split(strings.TrimSuffix(b, "\n"), "\n") {
		if !sumsLine.MatchString(l) || l[66:] <= prev {
			return false
		}
		prev = l[66:]
	}
	return true
}

// malformedSums: the release's SHA256SUMS with one edit, signed properly
// by the vendor's key (by mistake): refused unless still well formed.
func (g *installGen) malformedSums(t *testing.T) installCase {
	t.Helper()
	var lines []string
	for _, a := range g.m.tr.manifest.Releases[0].Artifacts {
		if a.Kind == publish.KindBinary {
			lines = append(lines, a.SHA256+"  "+a.FileName())
		}
	}
	body := strings.Join(g.mutate(sortedByName(lines)), "\n") + "\n"
	ok := sumsWellFormed(body) && strings.Contains(body, g.genuineLine())
	return installCase{name: "MalformedSums", files: map[string][]byte{
		genSums:          []byte(body),
		genSums + ".sig": signSumsFor(g.m.tr, g.m.url, genSums, []byte(body)),
	}, refuseLatest: !ok, refuseVersion: !ok, exact: true}
}

func (g *installGen) genuineLine() string {
	return fmt.Sprintf("%x  %s\n", sha256.Sum256(g.m.tr.files["bin/26.1.2/"+genName]), genName)
}

// sortedByName sorts SHA256SUMS lines by their file name, as publish
// writes them.
func sortedByName(lines []string) []string {
	out := slices.Clone(lines)
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
	return out
}

// run installs latest and version=26.1.2 through the mirror answering c,
// on a fresh machine (or one that installed through the genuine tree
// first), then again through the genuine tree, and counts violations.
func (g *installGen) run(t *testing.T, label string, c installCase, shell string) int {
	t.Helper()
	genuine := "26.1.2"
	violations := 0
	bad := func(format string, args ...any) {
		t.Errorf("%s: %s", label, fmt.Sprintf(format, args...))
		violations++
	}
	for _, req := range []struct {
		env    []string
		refuse bool
	}{{nil, c.refuseLatest}, {[]string{"version=26.1.2"}, c.refuseVersion}} {
		mc := machine{home: t.TempDir(), shell: shell}
		if c.stateful {
			if r := mc.install(t, g.m.url); r.err != nil {
				t.Fatalf("%s: the genuine tree does not install: %v\n%s", label, r.err, r.stderr)
			}
		}
		g.serve(t, c.files)
		r := mc.install(t, g.m.url, req.env...)
		got := mc.installed(t)
		switch {
		case r.err == nil && got != genuine:
			bad("%v installed %q through the mirror, want %s or a refusal\n%s", req.env, got, genuine, r.stderr)
		case r.err == nil && req.refuse:
			bad("%v installed from a record or SHA256SUMS the Go parser refuses:\n%q", req.env, c.files)
		case r.err != nil && c.exact && !req.refuse:
			bad("%v refused a record or SHA256SUMS the Go parser accepts: %s%q", req.env, r.stderr, c.files)
		case r.err != nil && (strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "install: ")):
			bad("%v refused with %q, want one line", req.env, r.stderr)
		}
		g.serve(t, nil)
		if c.files["channel"] == nil {
			continue // only a record the script took leaves state behind
		}
		if r := mc.install(t, g.m.url, req.env...); r.err != nil || mc.installed(t) != genuine {
			bad("%v: after the mirror, the genuine tree no longer installs: %v %s", req.env, r.err, r.stderr)
		}
	}
	return violations
}

// serve makes the mirror answer files (nil: nothing of its own).
func (g *installGen) serve(t *testing.T, files map[string][]byte) {
	t.Helper()
	entries, _ := os.ReadDir(g.m.overrides)
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(g.m.overrides, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	for p, b := range files {
		full := filepath.Join(g.m.overrides, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
