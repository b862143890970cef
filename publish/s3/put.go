package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/minio/minio-go/v7"

	"github.com/wharfhq/wharf/publish"
)

// Put writes the object at key from r.
//
// Objects up to the part size go in one PUT with x-amz-checksum-sha256 of
// the bytes read; the server verifies it and keeps it as the object's
// whole-object SHA-256. Larger objects go in a multipart upload: parts are
// read one after the other into buffers of a pool shared by the store,
// uploaded in parallel, each with its own x-amz-checksum-sha256. While
// reading, Put hashes the whole stream too (a publish.HashingReader has
// hashed it already), and after the upload compares the server's
// composite checksum (SHA-256 of the parts' SHA-256s) with the one
// computed here: equal means the server holds exactly the parts that
// were hashed, so the whole-object SHA-256 returned in ObjectInfo.SHA256 is
// the SHA-256 of the stored object, without downloading it again.
//
// When opts.SHA256 is set the server checks a single PUT against it; for a
// multipart upload the whole-stream hash is compared before the upload is
// completed, so a mismatch leaves nothing visible either way.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64, opts publish.PutOptions) (publish.ObjectInfo, error) {
	name, err := s.objectName(key)
	if err != nil {
		return publish.ObjectInfo{}, err
	}
	if opts.SHA256 != nil && len(opts.SHA256) != sha256.Size {
		return publish.ObjectInfo{}, fmt.Errorf("s3: put %s: SHA256 has %d bytes, want %d", key, len(opts.SHA256), sha256.Size)
	}
	p := &putter{s: s, key: key, name: name, opts: opts, whole: publish.Hashing(r), partSize: partSizeFor(size, s.partSize)}
	info, err := p.put(ctx, p.whole, size)
	if err != nil {
		return publish.ObjectInfo{}, s.translatePut(key, opts, err)
	}
	return info, nil
}

// putter is one Put.
type putter struct {
	s        *Store
	key      string
	name     string
	opts     publish.PutOptions
	whole    publish.HashingReader // the stream, hashed as it is read
	n        int64                 // bytes read
	partSize int
}

// partSizeFor is the part size for an object of size bytes: the store's,
// or more for objects that would need more than the 10000 parts S3 allows
// (over 156 GiB with 16 MiB parts), rounded up to a MiB. An object of
// unknown size gets the store's part size.
func partSizeFor(size int64, partSize int) int {
	if size <= int64(partSize)*maxParts {
		return partSize
	}
	const mib = 1 << 20
	need := (size + maxParts - 1) / maxParts
	return int((need + mib - 1) / mib * mib)
}

// fill reads the next part into a pooled buffer, hashing as it goes. It
// returns io.EOF with no buffer when the stream is at its end.
func (p *putter) fill(ctx context.Context, r io.Reader, size int64) (*part, error) {
	want := p.partSize
	if size >= 0 && size-p.n < int64(want) {
		want = int(size - p.n)
	}
	buf, err := p.s.bufs.get(ctx, p.partSize)
	if err != nil {
		return nil, err
	}
	n, err := io.ReadFull(r, buf[:want])
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		if size >= 0 {
			p.s.bufs.put(buf)
			return nil, fmt.Errorf("read: %w after %d of %d bytes", io.ErrUnexpectedEOF, p.n+int64(n), size)
		}
	case err != nil:
		p.s.bufs.put(buf)
		return nil, fmt.Errorf("read: %w", err)
	}
	if n == 0 && p.n > 0 {
		p.s.bufs.put(buf)
		return nil, io.EOF
	}
	p.n += int64(n)
	return &part{buf: buf, data: buf[:n]}, nil
}

type part struct {
	num  int
	buf  []byte // the pooled buffer, returned after upload
	data []byte
}

// more reports whether r has bytes after the n read so far, without taking
// a buffer: a known size answers at once, else one byte is peeked.
func more(r io.Reader, size, n int64) (bool, io.Reader, error) {
	if size >= 0 {
		return size > n, r, nil
	}
	var b [1]byte
	for {
		m, err := r.Read(b[:])
		if m > 0 {
			return true, io.MultiReader(bytes.NewReader(b[:m]), r), nil
		}
		if err == io.EOF {
			return false, r, nil
		}
		if err != nil {
			return false, r, fmt.Errorf("read: %w", err)
		}
	}
}

func (p *putter) put(ctx context.Context, r io.Reader, size int64) (publish.ObjectInfo, error) {
	first, err := p.fill(ctx, r, size)
	if err != nil {
		return publish.ObjectInfo{}, err
	}
	rest, r, err := more(r, size, p.n)
	if err != nil {
		p.s.bufs.put(first.buf)
		return publish.ObjectInfo{}, err
	}
	if !rest {
		defer p.s.bufs.put(first.buf)
		return p.single(ctx, first)
	}
	return p.multipart(ctx, first, r, size)
}

// conditional sets If-Match / If-None-Match on o.
func (p *putter) conditional(o *minio.PutObjectOptions) {
	if p.opts.IfMatch != "" {
		o.SetMatchETag(strings.Trim(p.opts.IfMatch, `"`))
	}
	if p.opts.IfNoneMatch {
		o.SetMatchETagExcept("*")
	}
}

func (p *putter) contentType() string {
	if p.opts.ContentType != "" {
		return p.opts.ContentType
	}
	return "application/octet-stream"
}

func (p *putter) single(ctx context.Context, pt *part) (publish.ObjectInfo, error) {
	sum := p.whole.SHA256() // the whole object is this one part
	claimed := sum
	if p.opts.SHA256 != nil {
		claimed = p.opts.SHA256 // the server refuses the body if it differs
	}
	o := minio.PutObjectOptions{
		ContentType:          p.contentType(),
		CacheControl:         p.opts.CacheControl,
		DisableContentSha256: true,
		UserMetadata:         map[string]string{"x-amz-checksum-sha256": base64.StdEncoding.EncodeToString(claimed)},
	}
	p.conditional(&o)
	// The payload is sent as UNSIGNED-PAYLOAD: the signed checksum header
	// already protects it, and the server hashes the body once.
	ui, err := p.s.core.PutObject(ctx, p.s.bucket, p.name, bytes.NewReader(pt.data), int64(len(pt.data)), "", "", o)
	if err != nil {
		return publish.ObjectInfo{}, err
	}
	info := publish.ObjectInfo{
		Key:     p.key,
		Size:    int64(len(pt.data)),
		ETag:    `"` + ui.ETag + `"`,
		ModTime: ui.LastModified,
	}
	// The server echoes the checksum it verified and keeps; a server that
	// ignores checksums echoes nothing, and then SHA256 stays empty so the
	// caller checks some other way.
	switch got := fullSHA256(ui.ChecksumSHA256); {
	case got == "":
	case got != hex.EncodeToString(claimed):
		return publish.ObjectInfo{}, fmt.Errorf("%w: server reports sha256 %s, sent %x", publish.ErrChecksumMismatch, got, claimed)
	default:
		info.SHA256 = hex.EncodeToString(sum)
	}
	return info, nil
}

func (p *putter) multipart(ctx context.Context, first *part, r io.Reader, size int64) (info publish.ObjectInfo, err error) {
	o := minio.PutObjectOptions{
		ContentType:  p.contentType(),
		CacheControl: p.opts.CacheControl,
		UserMetadata: map[string]string{"x-amz-checksum-algorithm": "SHA256"},
	}
	if p.opts.SHA256 != nil {
		o.UserMetadata[metaSHA256] = hex.EncodeToString(p.opts.SHA256)
	}
	p.conditional(&o) // fail early on a lost precondition; checked again at completion
	uploadID, err := p.s.core.NewMultipartUpload(ctx, p.s.bucket, p.name, o)
	if err != nil {
		p.s.bufs.put(first.buf)
		return publish.ObjectInfo{}, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer func() {
		if err != nil {
			// Abort with a fresh context: ctx may be what failed.
			actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
			defer acancel()
			p.s.core.AbortMultipartUpload(actx, p.s.bucket, p.name, uploadID)
		}
	}()

	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		parts []minio.CompletePart
		sums  = map[int][]byte{}
	)
	// Each part is hashed in its own goroutine, beside the whole-stream
	// hash of the reading one, so the hashing spreads over the cores.
	upload := func(pt *part) {
		defer wg.Done()
		defer p.s.bufs.put(pt.buf)
		sum := sha256.Sum256(pt.data)
		op, err := p.s.core.PutObjectPart(ctx, p.s.bucket, p.name, uploadID, pt.num,
			bytes.NewReader(pt.data), int64(len(pt.data)), minio.PutObjectPartOptions{
				DisableContentSha256: true,
				CustomHeader:         map[string][]string{"X-Amz-Checksum-Sha256": {base64.StdEncoding.EncodeToString(sum[:])}},
			})
		if err != nil {
			cancel(fmt.Errorf("part %d: %w", pt.num, err))
			return
		}
		mu.Lock()
		defer mu.Unlock()
		parts = append(parts, minio.CompletePart{PartNumber: pt.num, ETag: op.ETag, ChecksumSHA256: op.ChecksumSHA256})
		sums[pt.num] = sum[:]
	}
	pt := first
	for num := 1; ; num++ {
		pt.num = num
		wg.Add(1)
		go upload(pt)
		pt, err = p.fill(ctx, r, size)
		if err == io.EOF {
			err = nil
			break
		}
		if err != nil {
			cancel(err)
			break
		}
	}
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil {
		return publish.ObjectInfo{}, cause
	}
	if size >= 0 && p.n != size {
		return publish.ObjectInfo{}, fmt.Errorf("read %d bytes, want %d", p.n, size)
	}
	whole := p.whole.SHA256()
	if p.opts.SHA256 != nil && !bytes.Equal(whole, p.opts.SHA256) {
		return publish.ObjectInfo{}, fmt.Errorf("%w: content has sha256 %x, want %x", publish.ErrChecksumMismatch, whole, p.opts.SHA256)
	}
	slices.SortFunc(parts, func(a, b minio.CompletePart) int { return a.PartNumber - b.PartNumber })
	ui, err := p.s.core.CompleteMultipartUpload(ctx, p.s.bucket, p.name, uploadID, parts, p.completeOptions())
	if err != nil {
		return publish.ObjectInfo{}, err
	}
	ordered := make([][]byte, len(parts))
	for i, cp := range parts {
		ordered[i] = sums[cp.PartNumber]
	}
	info = publish.ObjectInfo{
		Key:  p.key,
		Size: p.n,
		ETag: `"` + ui.ETag + `"`,
	}
	// The whole-stream SHA-256 stands for the stored object only when the
	// server's composite of the parts it kept matches the one computed
	// over the same bytes; a server that keeps no checksum leaves SHA256
	// empty.
	switch want := compositeSHA256(ordered); ui.ChecksumSHA256 {
	case "":
	case want:
		info.SHA256 = hex.EncodeToString(whole)
	default:
		// Too late to keep it invisible, but never report a wrong object as good.
		return publish.ObjectInfo{}, fmt.Errorf("%w: server's composite sha256 %s, computed %s", publish.ErrChecksumMismatch, ui.ChecksumSHA256, want)
	}
	return info, nil
}

func (p *putter) completeOptions() minio.PutObjectOptions {
	var o minio.PutObjectOptions
	p.conditional(&o)
	return o
}

// compositeSHA256 is S3's checksum of a multipart object: base64 of the
// SHA-256 of the concatenated part SHA-256s, then "-" and the part count.
func compositeSHA256(sums [][]byte) string {
	h := sha256.New()
	for _, s := range sums {
		h.Write(s)
	}
	return fmt.Sprintf("%s-%d", base64.StdEncoding.EncodeToString(h.Sum(nil)), len(sums))
}

// bufferPool hands out at most n part buffers, shared by all Puts of a
// store, so upload memory stays bounded however many Puts run and however
// large the objects are.
type bufferPool struct {
	free      chan []byte
	size      int
	allocated atomic.Int64 // buffers made so far, for tests
}

func newBufferPool(n, size int) *bufferPool {
	bp := &bufferPool{free: make(chan []byte, n), size: size}
	for range n {
		bp.free <- nil // allocated on first use
	}
	return bp
}

// get takes a buffer of at least n bytes (the pool's size, or more for the
// rare object that needs larger parts), waiting for one to be free.
func (bp *bufferPool) get(ctx context.Context, n int) ([]byte, error) {
	select {
	case b := <-bp.free:
		if cap(b) < max(n, bp.size) {
			b = make([]byte, max(n, bp.size))
			bp.allocated.Add(1)
		}
		return b[:cap(b)], nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (bp *bufferPool) put(b []byte) { bp.free <- b[:cap(b)] }
