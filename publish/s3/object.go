package s3

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/minio/minio-go/v7"

	"github.com/wharfhq/wharf/publish"
)

// object is an open object: the body of the GET that opened it, and ranged
// GETs of the same ETag after a Seek.
type object struct {
	s    *Store
	ctx  context.Context // of Open, for the ranged GETs after a Seek
	key  string
	name string
	info publish.ObjectInfo
	etag string // unquoted, as minio-go wants it

	body    io.ReadCloser // nil when closed or after a failed reopen
	bodyPos int64         // offset body reads from
	pos     int64         // offset of the next Read
	closed  bool
}

func (o *object) Info() publish.ObjectInfo { return o.info }

func (o *object) Read(p []byte) (int, error) {
	if o.closed {
		return 0, fmt.Errorf("s3: read %s: %w", o.key, errClosed)
	}
	if o.pos >= o.info.Size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if o.body == nil || o.bodyPos != o.pos {
		if err := o.reopen(); err != nil {
			return 0, err
		}
	}
	n, err := o.body.Read(p)
	o.pos += int64(n)
	o.bodyPos += int64(n)
	switch {
	case err == io.EOF && o.pos < o.info.Size:
		err = o.s.translate("read", o.key, io.ErrUnexpectedEOF)
	case err == io.EOF:
	case err != nil:
		err = o.s.translate("read", o.key, err)
	}
	return n, err
}

// reopen continues at o.pos with a ranged GET of the same version.
func (o *object) reopen() error {
	if o.body != nil {
		o.body.Close()
		o.body = nil
	}
	var opts minio.GetObjectOptions
	if o.pos > 0 {
		// SetRange(0, 0) would ask for one byte; from 0 is no Range at all.
		if err := opts.SetRange(o.pos, 0); err != nil {
			return fmt.Errorf("s3: read %s at %d: %w", o.key, o.pos, err)
		}
	}
	if o.etag != "" {
		opts.SetMatchETag(o.etag)
	}
	body, _, _, err := o.s.core.GetObject(o.ctx, o.s.bucket, o.name, opts)
	if err != nil {
		return o.s.translate("read", o.key, err)
	}
	o.body, o.bodyPos = body, o.pos
	return nil
}

func (o *object) Seek(offset int64, whence int) (int64, error) {
	if o.closed {
		return 0, fmt.Errorf("s3: seek %s: %w", o.key, errClosed)
	}
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = o.pos + offset
	case io.SeekEnd:
		abs = o.info.Size + offset
	default:
		return 0, fmt.Errorf("s3: seek %s: invalid whence %d", o.key, whence)
	}
	if abs < 0 {
		return 0, fmt.Errorf("s3: seek %s: negative position %d", o.key, abs)
	}
	o.pos = abs
	return abs, nil
}

func (o *object) Close() error {
	if o.closed {
		return nil
	}
	o.closed = true
	if o.body != nil {
		return o.body.Close()
	}
	return nil
}

var errClosed = errors.New("object is closed")
