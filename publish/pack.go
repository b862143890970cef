package publish

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"time"
)

// PackModTime is the modification time of every file packed by Pack: a
// constant, so the same executable always gives the same archive.
var PackModTime = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// Pack writes a reproducible .tar.gz to w holding one file, name, with the
// size bytes of r: mode 0755, owner and group 0 without names, mtime
// PackModTime, and a gzip header without name or time. The same input
// gives the same bytes (with the same Go release: the archive is as stable
// as compress/flate's output).
//
// It compresses with gzip.BestSpeed: on Go executables that costs a third
// of the CPU of the default level for archives about 8% larger, and
// publishing should cost little more than moving the bytes.
func Pack(w io.Writer, name string, r io.Reader, size int64) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return fmt.Errorf("pack %s: %w", name, err)
	}
	// The zero header: no name, no mtime, OS "unknown" (255).
	tw := tar.NewWriter(gz)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     0o755,
		Size:     size,
		ModTime:  PackModTime,
		Format:   tar.FormatUSTAR,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("pack %s: %w", name, err)
	}
	n, err := io.Copy(tw, r)
	if err != nil {
		return fmt.Errorf("pack %s: after %d bytes: %w", name, n, err)
	}
	if n != size {
		return fmt.Errorf("pack %s: read %d bytes, want %d (did the file change?)", name, n, size)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("pack %s: %w", name, err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("pack %s: %w", name, err)
	}
	return nil
}

// packReader streams Pack's output: the archive is never held whole in
// memory nor written to disk, and r is read once. Close stops the packing.
func packReader(name string, r io.Reader, size int64) io.ReadCloser {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(Pack(pw, name, r, size))
	}()
	return &packed{PipeReader: pr, done: done}
}

type packed struct {
	*io.PipeReader
	done chan struct{}
}

// Close stops the packing goroutine and waits for it.
func (p *packed) Close() error {
	p.PipeReader.CloseWithError(errPackClosed)
	<-p.done
	return nil
}

var errPackClosed = fmt.Errorf("pack: reader closed")

// Input forms: how a file of INPUT_DIR becomes an artifact.
const (
	FormExecutable = "executable" // a raw executable, packed into .tar.gz
	FormArchive    = "archive"    // a ready .tar.gz, taken as it is
	FormImage      = "image"      // a docker save .tar, taken as it is
)

// checkForm looks at the first bytes of an input file (a sniff of at most
// 512 bytes, not a second read of the file) and refuses a file that cannot
// be what its name says.
func checkForm(form string, head []byte) error {
	switch form {
	case FormArchive:
		if len(head) < 2 || head[0] != 0x1f || head[1] != 0x8b {
			return fmt.Errorf("named .tar.gz but not gzip data")
		}
	case FormImage:
		if len(head) < 262 || !bytes.Equal(head[257:262], []byte("ustar")) {
			return fmt.Errorf("named .tar but not a tar archive (want the output of docker save)")
		}
	case FormExecutable:
		if len(head) == 0 {
			return fmt.Errorf("empty file")
		}
		if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
			return fmt.Errorf("gzip data without a .tar.gz name (name a ready archive NAME-OS-PLATFORM.tar.gz)")
		}
	}
	return nil
}
