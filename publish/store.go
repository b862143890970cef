package publish

import (
	"context"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"time"
)

// Errors a Store returns; adapters wrap them with context, so compare with errors.Is.
var (
	// ErrNotFound: no object at the key.
	ErrNotFound = errors.New("object not found")
	// ErrPreconditionFailed: a conditional Put lost (IfMatch no longer
	// matches, or IfNoneMatch and the object exists).
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrUnavailable: the store cannot be reached or answered a server
	// error; the operation may succeed later.
	ErrUnavailable = errors.New("store unavailable")
	// ErrInvalidKey: the key is empty, absolute, or has "." or ".." elements,
	// backslashes or NUL.
	ErrInvalidKey = errors.New("invalid object key")
	// ErrChecksumMismatch: the content written does not match
	// PutOptions.SHA256; nothing was stored.
	ErrChecksumMismatch = errors.New("content does not match its sha256")
)

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Key     string
	Size    int64
	ETag    string    // opaque, quoted as in HTTP; changes when the content changes
	ModTime time.Time // last write
	SHA256  string    // hex SHA-256 of the whole object when the store keeps one, else ""
}

// Object is an open stored object. Seek and Read let http.ServeContent
// answer Range requests without reading the whole object.
type Object interface {
	io.ReadSeekCloser
	Info() ObjectInfo
}

// PutOptions control a write.
type PutOptions struct {
	ContentType string
	// CacheControl is kept with the object where the store keeps headers
	// (S3 object metadata) and sent with every GET of it; see CacheControl.
	CacheControl string
	// SHA256 is the raw SHA-256 of the content when the caller knows it in
	// advance; the store verifies the content against it and rejects a
	// mismatch. May be nil.
	SHA256 []byte
	// IfMatch makes the write conditional on the current ETag.
	IfMatch string
	// IfNoneMatch makes the write succeed only if no object exists at the key.
	IfNoneMatch bool
}

// A HashingReader computes the SHA-256 of the bytes read from it. A Put
// handed one takes its digest at the end instead of hashing the same bytes
// again: the publisher hashes every artifact as it streams it, and hashing
// is most of the publishing process's CPU.
type HashingReader interface {
	io.Reader
	// SHA256 returns the raw SHA-256 of exactly the bytes Read has
	// returned so far.
	SHA256() []byte
}

// Hashing returns r when it is a HashingReader already, else a
// HashingReader that reads from r.
func Hashing(r io.Reader) HashingReader {
	if hr, ok := r.(HashingReader); ok {
		return hr
	}
	return &hashingReader{r: r, h: sha256.New()}
}

type hashingReader struct {
	r io.Reader
	h hash.Hash
}

func (hr *hashingReader) Read(p []byte) (int, error) {
	n, err := hr.r.Read(p)
	hr.h.Write(p[:n])
	return n, err
}

func (hr *hashingReader) SHA256() []byte { return hr.h.Sum(nil) }

// Store holds a published tree: a directory or an S3 bucket prefix. Writes
// are atomic: a reader sees the old object or the whole new one, never a
// part. Implementations are safe for concurrent use.
type Store interface {
	// Open opens the object at key for reading. Errors: ErrNotFound,
	// ErrInvalidKey, ErrUnavailable.
	Open(ctx context.Context, key string) (Object, error)
	// Stat describes the object at key. Errors: ErrNotFound, ErrInvalidKey,
	// ErrUnavailable.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// Put writes size bytes from r (size -1 when unknown) at key. The
	// returned info carries the store's SHA-256 when it keeps one. When r
	// is a HashingReader, Put may use its digest rather than hash again.
	// Errors:
	// ErrPreconditionFailed (conditional writes), ErrInvalidKey,
	// ErrUnavailable, and ErrChecksumMismatch for content that does not
	// match opts.SHA256 (nothing is stored then).
	Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (ObjectInfo, error)
	// List returns the objects whose keys start with prefix, sorted by key.
	// Errors: ErrUnavailable.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
}

// Checker is implemented by stores that can tell whether they are there
// at all: the directory exists (and is the one opened), the bucket
// answers. A server's health check asks it.
type Checker interface {
	// Check returns nil when the store can be used. Errors:
	// ErrUnavailable.
	Check(ctx context.Context) error
}

// TempCleaner is implemented by stores where a write that was killed
// leaves data behind that is not an object: temporary files in a
// directory, incomplete multipart uploads in S3. The publisher calls it at
// the start of every publish.
type TempCleaner interface {
	// CleanTemp removes what writes started more than age ago left behind
	// and reports how many it removed and their size in bytes. keys are
	// the keys the caller is about to write, for stores that cannot list
	// leftovers by prefix (MinIO lists incomplete uploads of one key only).
	CleanTemp(ctx context.Context, age time.Duration, keys []string) (n int, size int64, err error)
}

// Presigner is implemented by stores that can hand out short-lived URLs
// for direct downloads (S3). filename sets the response's
// Content-Disposition attachment name.
type Presigner interface {
	PresignGet(ctx context.Context, key, filename string, expiry time.Duration) (string, error)
}
