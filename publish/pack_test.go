package publish_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
)

func pack(t *testing.T, name string, content []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := publish.Pack(&buf, name, bytes.NewReader(content), int64(len(content))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestPackReproducible(t *testing.T) {
	exe := []byte("#!/bin/sh\necho treasury\n" + strings.Repeat("x", 100000))
	a := pack(t, "treasury", exe)
	// Another moment, another reader shape: the same bytes.
	var b bytes.Buffer
	if err := publish.Pack(&b, "treasury", iotest.OneByteReader(bytes.NewReader(exe)), int64(len(exe))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b.Bytes()) {
		t.Fatal("two packs of the same executable differ")
	}
	if c := pack(t, "treasury", append(exe, '\n')); bytes.Equal(a, c) {
		t.Fatal("packs of different executables are equal")
	}

	// The gzip header carries no name and no time.
	zr, err := gzip.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() || zr.Comment != "" {
		t.Errorf("gzip header = %+v, want no name, time or comment", zr.Header)
	}
	tr := tar.NewReader(zr)
	hdr, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	if hdr.Name != "treasury" || hdr.Mode != 0o755 || hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || hdr.Gname != "" ||
		!hdr.ModTime.Equal(publish.PackModTime) || hdr.Typeflag != tar.TypeReg {
		t.Errorf("tar header = %+v", hdr)
	}
	got, _ := io.ReadAll(tr)
	if !bytes.Equal(got, exe) {
		t.Error("archive content differs from the executable")
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("second entry: %v, want io.EOF (one file only)", err)
	}
}

// TestPackTar unpacks with the system tar, as the spec tells users to.
func TestPackTar(t *testing.T) {
	tarBin := testenv.Tool(t, "tar")
	dir := t.TempDir()
	archive := filepath.Join(dir, "treasury-cli-26.1.1-linux-amd64.tar.gz")
	exe := []byte("#!/bin/sh\necho ok\n")
	if err := os.WriteFile(archive, pack(t, "treasury", exe), 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "bin")
	os.Mkdir(target, 0o755)
	run(t, tarBin, "xzf", archive, "-C", target)
	st, err := os.Stat(filepath.Join(target, "treasury"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o111 == 0 {
		t.Errorf("unpacked mode = %v, want executable", st.Mode())
	}
	if out := run(t, filepath.Join(target, "treasury")); out != "ok\n" {
		t.Errorf("unpacked executable printed %q", out)
	}
}

func TestPackShortInput(t *testing.T) {
	var buf bytes.Buffer
	err := publish.Pack(&buf, "engine", strings.NewReader("short"), 10)
	if err == nil {
		t.Fatal("Pack accepted fewer bytes than the size")
	}
}

// BenchmarkPack packs the test binary itself, a realistic executable.
func BenchmarkPack(b *testing.B) {
	exe, err := os.ReadFile(os.Args[0])
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(exe)))
	for b.Loop() {
		if err := publish.Pack(io.Discard, "treasury", bytes.NewReader(exe), int64(len(exe))); err != nil {
			b.Fatal(err)
		}
	}
}
