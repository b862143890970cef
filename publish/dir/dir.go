// Package dir is a publish.Store on a local directory, the embedded
// default store of wharf.
//
// Every key is a relative path under the root. Writes go to a temporary
// file in the target's directory, are fsynced and renamed over the target,
// so a reader sees the old object or the whole new one. The final rename of
// every write, and the check of a conditional write, happen under an
// exclusive flock on .wharf.lock in the root, so two processes racing on a
// pointer or the manifest get ErrPreconditionFailed, never a lost update.
// All file access goes through an os.Root: neither ".." nor a symlink can
// reach outside the root.
package dir

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/wharfhq/wharf/publish"
)

// reserved is the prefix of the store's own files in the tree (the lock
// file, temporary files). Keys with an element that starts with it are
// refused, and List never returns them.
const reserved = ".wharf"

// lockName is the lock file in the root.
const lockName = reserved + ".lock"

// Store is a publish.Store on a directory. It is safe for concurrent use
// by goroutines and by processes sharing the directory.
type Store struct {
	dir string
	// root is the open directory; nil while it does not exist (a store
	// opened with Open on a missing path, or deleted while serving).
	root atomic.Pointer[os.Root]
}

var _ publish.Store = (*Store)(nil)

// New opens the directory at root as a Store, creating it if missing
// (wharf publish).
func New(root string) (*Store, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("open store %s: %w", root, err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", root, err)
	}
	s := &Store{dir: root}
	s.root.Store(r)
	return s, nil
}

// Open opens the directory at root as a Store without creating it (wharf
// serve): while it does not exist, every operation fails with
// publish.ErrUnavailable, and the store opens it once it appears.
func Open(root string) *Store {
	s := &Store{dir: root}
	if r, err := os.OpenRoot(root); err == nil {
		s.root.Store(r)
	}
	return s
}

var _ publish.Checker = (*Store)(nil)

// Check reports whether the store's directory exists and is the one the
// store has open. A directory that appeared is opened; one that was
// deleted is dropped (and reopened when it is back), so a server notices
// both within one check.
func (s *Store) Check(ctx context.Context) error {
	st, err := os.Stat(s.dir)
	if err != nil || !st.IsDir() {
		if old := s.root.Swap(nil); old != nil {
			old.Close()
		}
		if err == nil {
			return fmt.Errorf("store %s: %w: not a directory", s.dir, publish.ErrUnavailable)
		}
		return fmt.Errorf("store %s: %w: %v", s.dir, publish.ErrUnavailable, err)
	}
	if cur := s.root.Load(); cur != nil {
		if rst, err := cur.Stat("."); err == nil && os.SameFile(st, rst) {
			return nil
		}
	}
	r, err := os.OpenRoot(s.dir)
	if err != nil {
		return fmt.Errorf("store %s: %w: %v", s.dir, publish.ErrUnavailable, err)
	}
	if old := s.root.Swap(r); old != nil {
		old.Close()
	}
	return nil
}

// r is the open directory, opened now if it appeared; publish.ErrUnavailable
// while it does not exist.
func (s *Store) r() (*os.Root, error) {
	if r := s.root.Load(); r != nil {
		return r, nil
	}
	r, err := os.OpenRoot(s.dir)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w: %v", s.dir, publish.ErrUnavailable, err)
	}
	if !s.root.CompareAndSwap(nil, r) {
		r.Close()
	}
	return s.root.Load(), nil
}

// Dir returns the directory the store was opened on.
func (s *Store) Dir() string { return s.dir }

// String describes the store for logs.
func (s *Store) String() string { return s.dir }

// Close releases the directory handle; the Store is unusable afterwards.
func (s *Store) Close() error {
	if r := s.root.Swap(nil); r != nil {
		return r.Close()
	}
	return nil
}

// checkKey applies publish.CheckKey and refuses the store's own names.
func checkKey(key string) error {
	if err := publish.CheckKey(key); err != nil {
		return err
	}
	for _, el := range strings.Split(key, "/") {
		if strings.HasPrefix(el, reserved) {
			return fmt.Errorf("%w %q: names starting with %q are reserved by the directory store", publish.ErrInvalidKey, key, reserved)
		}
	}
	return nil
}

// Open opens the object at key. The returned Object is backed by an
// *os.File, so it seeks without reading.
func (s *Store) Open(ctx context.Context, key string) (publish.Object, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	root, err := s.r()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := root.Open(key)
	if err != nil {
		return nil, s.pathError("open", key, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s: %w", key, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("open %s: %w (not a regular file)", key, publish.ErrNotFound)
	}
	return &object{File: f, info: info(key, st)}, nil
}

// Stat describes the object at key. ObjectInfo.SHA256 is always empty:
// the directory keeps no checksums.
func (s *Store) Stat(ctx context.Context, key string) (publish.ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return publish.ObjectInfo{}, err
	}
	root, err := s.r()
	if err != nil {
		return publish.ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return publish.ObjectInfo{}, err
	}
	st, err := root.Stat(key)
	if err != nil {
		return publish.ObjectInfo{}, s.pathError("stat", key, err)
	}
	if !st.Mode().IsRegular() {
		return publish.ObjectInfo{}, fmt.Errorf("stat %s: %w (not a regular file)", key, publish.ErrNotFound)
	}
	return info(key, st), nil
}

// Put writes the object at key atomically. The returned info carries the
// SHA-256 of the bytes written, taken as they were written (from r itself
// when it is a publish.HashingReader), so a caller need not read the file
// back from the page cache to know what is stored; Stat carries none, as a
// directory keeps no checksums. opts.SHA256 is checked against the bytes
// read from r.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64, opts publish.PutOptions) (publish.ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return publish.ObjectInfo{}, err
	}
	root, err := s.r()
	if err != nil {
		return publish.ObjectInfo{}, err
	}
	// Fail fast before moving any bytes; the check that counts is repeated
	// under the lock.
	if opts.IfMatch != "" || opts.IfNoneMatch {
		if err := s.precondition(root, key, opts); err != nil {
			return publish.ObjectInfo{}, err
		}
	}
	dir := path.Dir(key)
	if dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return publish.ObjectInfo{}, fmt.Errorf("put %s: %w", key, err)
		}
	}
	tmp, sum, err := s.writeTemp(ctx, root, key, r, size, opts.SHA256)
	if err != nil {
		return publish.ObjectInfo{}, err
	}
	st, err := s.commit(root, key, tmp, opts)
	if err != nil {
		root.Remove(tmp)
		return publish.ObjectInfo{}, err
	}
	in := info(key, st)
	in.SHA256 = hex.EncodeToString(sum)
	return in, nil
}

// writeTemp copies r into a fresh temporary file beside key, checking the
// size and the SHA-256 when one is wanted, and fsyncs it; it returns the
// file's name and the SHA-256 of what it wrote. On error nothing is left
// behind.
func (s *Store) writeTemp(ctx context.Context, root *os.Root, key string, r io.Reader, size int64, want []byte) (tmp string, sum []byte, err error) {
	var rnd [8]byte
	rand.Read(rnd[:])
	name := path.Join(path.Dir(key), tempPrefix+hex.EncodeToString(rnd[:])+"-"+path.Base(key))
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", nil, fmt.Errorf("put %s: %w", key, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			root.Remove(name)
		}
	}()
	var n int64
	if sec, ok := r.(*publish.FileSection); ok {
		// Copied in the kernel, unread; its digest is the one the
		// publisher took (see publish.SectionCopier).
		n, err = copySection(ctx, f, sec)
		sum = sec.SHA256
	} else {
		hr := publish.Hashing(r)
		n, err = io.Copy(f, ctxReader{ctx, hr})
		sum = hr.SHA256()
	}
	if err != nil {
		return "", nil, fmt.Errorf("put %s: after %d bytes: %w", key, n, err)
	}
	if size >= 0 && n != size {
		return "", nil, fmt.Errorf("put %s: read %d bytes, want %d", key, n, size)
	}
	if want != nil && subtle.ConstantTimeCompare(sum, want) != 1 {
		return "", nil, fmt.Errorf("put %s: %w: content has sha256 %x, want %x", key, publish.ErrChecksumMismatch, sum, want)
	}
	if err := f.Sync(); err != nil {
		return "", nil, fmt.Errorf("put %s: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return "", nil, fmt.Errorf("put %s: %w", key, err)
	}
	return name, sum, nil
}

// CopiesSections reports that Put copies a publish.FileSection without
// reading it (copy_file_range on Linux, through os.File.ReadFrom).
func (s *Store) CopiesSections() bool { return true }

// sectionChunk is how much of a section one copy_file_range call may
// copy between checks of the context.
const sectionChunk = 64 << 20

// copySection copies sec into f, in chunks, checking ctx between them. It
// moves the section's file offset (which belongs to the section).
func copySection(ctx context.Context, f *os.File, sec *publish.FileSection) (int64, error) {
	if _, err := sec.File.Seek(sec.Offset, io.SeekStart); err != nil {
		return 0, err
	}
	var n int64
	for n < sec.Size {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		// *os.File to *os.File through io.LimitedReader: copy_file_range.
		m, err := io.CopyN(f, sec.File, min(sectionChunk, sec.Size-n))
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// commit renames tmp over key under the lock, after checking the
// preconditions, and syncs the directory. It makes the new file's mtime
// later than the old one's, so the ETag changes with every write even on
// coarse clocks.
func (s *Store) commit(root *os.Root, key, tmp string, opts publish.PutOptions) (fs.FileInfo, error) {
	st, err := s.rename(root, key, tmp, opts)
	if err != nil {
		return nil, err
	}
	// The directory is synced after the lock is released: the lock
	// orders the checks and renames of writers, which see each other's
	// renames whether or not they are on disk yet, and Put returns only
	// once its rename is.
	if d, err := root.Open(path.Dir(key)); err == nil {
		d.Sync()
		d.Close()
	}
	return st, nil
}

// rename is commit's part under the lock: the precondition, the mtime
// and the rename.
func (s *Store) rename(root *os.Root, key, tmp string, opts publish.PutOptions) (fs.FileInfo, error) {
	unlock, err := s.lock(root)
	if err != nil {
		return nil, fmt.Errorf("put %s: %w", key, err)
	}
	defer unlock()
	if err := s.precondition(root, key, opts); err != nil {
		return nil, err
	}
	if old, err := root.Lstat(key); err == nil {
		if err := s.after(root, tmp, old.ModTime()); err != nil {
			return nil, fmt.Errorf("put %s: %w", key, err)
		}
	}
	if err := root.Rename(tmp, key); err != nil {
		return nil, fmt.Errorf("put %s: %w", key, err)
	}
	st, err := root.Lstat(key)
	if err != nil {
		return nil, fmt.Errorf("put %s: %w", key, err)
	}
	return st, nil
}

// after sets the mtime of name later than t if it is not already.
func (s *Store) after(root *os.Root, name string, t time.Time) error {
	for _, d := range []time.Duration{0, time.Microsecond, time.Millisecond, time.Second, 2 * time.Second} {
		st, err := root.Lstat(name)
		if err != nil {
			return err
		}
		if st.ModTime().After(t) {
			return nil
		}
		if d == 0 {
			continue
		}
		if err := root.Chtimes(name, time.Now(), t.Add(d)); err != nil {
			return err
		}
	}
	return errors.New("file system does not keep modification times")
}

// precondition checks opts.IfMatch and opts.IfNoneMatch against the
// current object at key.
func (s *Store) precondition(root *os.Root, key string, opts publish.PutOptions) error {
	if opts.IfMatch == "" && !opts.IfNoneMatch {
		return nil
	}
	st, err := root.Stat(key)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("put %s: %w", key, err)
	}
	if opts.IfNoneMatch && exists {
		return fmt.Errorf("put %s: %w: object exists", key, publish.ErrPreconditionFailed)
	}
	if opts.IfMatch != "" {
		if !exists {
			return fmt.Errorf("put %s: %w: object does not exist", key, publish.ErrPreconditionFailed)
		}
		if got := etag(st); got != opts.IfMatch {
			return fmt.Errorf("put %s: %w: etag is %s, not %s", key, publish.ErrPreconditionFailed, got, opts.IfMatch)
		}
	}
	return nil
}

// lock takes the store's exclusive lock, shared with other processes
// through a lock on .wharf.lock (flock on Unix, LockFileEx on Windows).
// The lock belongs to the open file, so goroutines of one process exclude
// each other too.
func (s *Store) lock(root *os.Root) (unlock func(), err error) {
	f, err := root.OpenFile(lockName, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", lockName, err)
	}
	return func() {
		unlockFile(f)
		f.Close()
	}, nil
}

// List returns the objects under prefix, sorted by key. The store's own
// files and anything that is not a regular file are left out.
func (s *Store) List(ctx context.Context, prefix string) ([]publish.ObjectInfo, error) {
	start := "."
	if i := strings.LastIndexByte(prefix, '/'); i > 0 {
		start = prefix[:i]
		if err := checkKey(start); err != nil {
			return nil, fmt.Errorf("list %q: %w", prefix, err)
		}
	}
	root, err := s.r()
	if err != nil {
		return nil, err
	}
	var out []publish.ObjectInfo
	err = fs.WalkDir(root.FS(), start, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if name == start && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), reserved) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			// Skip directories that cannot hold a matching key.
			if name != "." && !strings.HasPrefix(name+"/", prefix) && !strings.HasPrefix(prefix, name+"/") {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(name, prefix) {
			return nil
		}
		st, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) { // removed meanwhile
				return nil
			}
			return err
		}
		out = append(out, info(name, st))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %q: %w", prefix, err)
	}
	slices.SortFunc(out, func(a, b publish.ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// tempPrefix starts the names of the temporary files of writes.
const tempPrefix = reserved + "-tmp-"

var _ publish.TempCleaner = (*Store)(nil)

// CleanTemp removes the temporary files of writes that were killed before
// their rename (a publish killed with SIGKILL, a crash) whose last change
// is more than age ago, anywhere in the tree (keys are not needed). A
// write in progress keeps changing its file.
func (s *Store) CleanTemp(ctx context.Context, age time.Duration, keys []string) (n int, size int64, err error) {
	cutoff := time.Now().Add(-age)
	root, err := s.r()
	if err != nil {
		return 0, 0, err
	}
	err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(d.Name(), tempPrefix) {
			return nil
		}
		st, err := d.Info()
		if err != nil || !st.ModTime().Before(cutoff) {
			return nil
		}
		if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		n++
		size += st.Size()
		return nil
	})
	if err != nil {
		return n, size, fmt.Errorf("clean temporary files: %w", err)
	}
	return n, size, nil
}

// pathError maps a file system error to the store's errors.
func (s *Store) pathError(op, key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir) {
		return fmt.Errorf("%s %s: %w", op, key, publish.ErrNotFound)
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}

// etag is cheap and changes with every write: the mtime in nanoseconds
// and the size, in hex, like nginx's (which uses seconds).
func etag(st fs.FileInfo) string {
	return `"` + strconv.FormatInt(st.ModTime().UnixNano(), 16) + "-" + strconv.FormatInt(st.Size(), 16) + `"`
}

func info(key string, st fs.FileInfo) publish.ObjectInfo {
	return publish.ObjectInfo{Key: key, Size: st.Size(), ETag: etag(st), ModTime: st.ModTime()}
}

// object is an open stored file.
type object struct {
	*os.File
	info publish.ObjectInfo
}

func (o *object) Info() publish.ObjectInfo { return o.info }

// ctxReader stops a copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
