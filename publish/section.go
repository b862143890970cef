package publish

import (
	"fmt"
	"io"
	"os"
)

// A FileSection reads Size bytes of File from Offset: bytes of an input
// whose SHA-256 the publisher took when it first read the file (an image
// archive, or a blob in it). A store that writes files may copy the
// section in the kernel (copy_file_range: the bytes never pass through the
// process) and report SHA256 as the digest of what it wrote; the
// publisher then checks that the file is the one it read (inputState).
// Any other store reads it as any reader, hashing what it reads. File's
// offset belongs to the section: Read does not use it (ReadAt), a store
// copying the section may move it.
type FileSection struct {
	File         *os.File
	Offset, Size int64
	// SHA256 is the raw digest of the section as the publisher read it.
	SHA256 []byte
	sr     *io.SectionReader
}

// NewFileSection is the section of f of n bytes from off, whose digest
// was sum when first read.
func NewFileSection(f *os.File, off, n int64, sum []byte) *FileSection {
	return &FileSection{File: f, Offset: off, Size: n, SHA256: sum, sr: io.NewSectionReader(f, off, n)}
}

// Read reads the section (ReadAt: the file's offset is not used).
func (s *FileSection) Read(p []byte) (int, error) { return s.sr.Read(p) }

// A SectionCopier is a Store that copies a FileSection handed to Put
// without reading it, taking the section's SHA256 as the digest of what
// it wrote (publish/dir). The publisher hands sections only to one.
type SectionCopier interface {
	Store
	// CopiesSections reports whether Put copies sections unread.
	CopiesSections() bool
}

// copiesSections reports whether image archives and their blobs go to the
// store as FileSections.
func (r *publishRun) copiesSections() bool {
	c, ok := r.Store.(SectionCopier)
	return kernelCopy && ok && c.CopiesSections()
}

// inputState is what identifies the contents of an input file without
// reading it: its size, modification and change times, device and inode
// (fileState). An archive rewritten in place, replaced or truncated after
// its first read has another.
type inputState struct {
	size         int64
	mtime, ctime int64 // nanoseconds
	dev, ino     uint64
}

// stateOf is the state of an open file.
func stateOf(f *os.File) (inputState, error) {
	st, err := f.Stat()
	if err != nil {
		return inputState{}, err
	}
	s := inputState{size: st.Size(), mtime: st.ModTime().UnixNano()}
	fileState(st, &s)
	return s, nil
}

// unchanged refuses an input whose file is no longer in the state it was
// first read in: the bytes copied from it unread (FileSection) may not be
// the ones its digests were taken of.
func unchanged(in Input, f *os.File, was inputState) error {
	now, err := stateOf(f)
	if err != nil {
		return fmt.Errorf("%s: %w", in.Path, err)
	}
	if now != was {
		return fmt.Errorf("%s: %w: its size, times or inode changed after it was read (%d bytes then, %d now); publish again once it is written", in.Path, ErrInputChanged, was.size, now.size)
	}
	return nil
}
