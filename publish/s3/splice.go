package s3

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/wharfhq/wharf/publish"
)

// spliceMin is the smallest copy CopyN splices. Below it a connection and
// a request of its own cost more than the copies they save, and reads stay
// on minio-go's pooled keep-alive connections.
const spliceMin = 4 << 20

// spliceExpiry is how long the signed URL of a spliced GET is valid. It is
// used at once and never leaves the process; 15 minutes is the clock skew
// S3 allows a signed request, so a skewed clock does not fail it sooner
// than it would fail minio-go's requests.
const spliceExpiry = 15 * time.Minute

var _ publish.Copier = (*object)(nil)

// CopyN writes the next n bytes of the object to w. When the endpoint is
// plain HTTP, at least spliceMin bytes are left to copy and w is an
// io.ReaderFrom (a *net.TCPConn, or net/http's response on one), the bytes
// come from a ranged GET of the same version on a connection of its own,
// handed to w.ReadFrom as an *io.LimitedReader of the *net.TCPConn, which
// Go copies socket to socket with splice(2): the body never enters user
// space. Otherwise, having written nothing, it returns
// errors.ErrUnsupported.
//
// When the GET is not answered with the expected bytes (the object was
// replaced, the server is down or answers an error), CopyN makes the same
// request through minio-go, which retries and reports what went wrong as
// Read would (ErrPreconditionFailed, ErrUnavailable, ...); if that request
// succeeds, CopyN returns errors.ErrUnsupported and Read continues from it.
func (o *object) CopyN(w io.Writer, n int64) (int64, error) {
	if o.closed {
		return 0, fmt.Errorf("s3: copy %s: %w", o.key, errClosed)
	}
	m := min(n, o.info.Size-o.pos)
	rf, ok := w.(io.ReaderFrom)
	if o.s.plain == nil || !ok || m < spliceMin {
		return 0, errors.ErrUnsupported
	}
	written, handled, err := o.splice(w, rf, m)
	if !handled {
		if o.body == nil {
			if err := o.reopen(); err != nil {
				return 0, err
			}
		}
		return 0, errors.ErrUnsupported
	}
	o.pos += written
	if err == nil && m < n {
		err = io.EOF
	}
	return written, err
}

// splice copies m bytes from o.pos to w with a GET on a connection of its
// own, closed at the end: a body of megabytes does not need a pooled one.
// handled is false when nothing was written, and the caller is to read
// through minio-go; the body of minio-go is then closed unless no request
// was made.
func (o *object) splice(w io.Writer, rf io.ReaderFrom, m int64) (written int64, handled bool, err error) {
	req, err := o.spliceRequest(m)
	if err != nil {
		return 0, false, nil
	}
	if o.body != nil {
		o.body.Close()
		o.body = nil
	}
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	dial := o.s.plain.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	conn, err := dial(o.ctx, "tcp", addr)
	if err != nil {
		return 0, false, nil
	}
	defer conn.Close()
	// Closing the connection is what interrupts a splice in progress when
	// the request that reads the object goes away.
	stop := context.AfterFunc(o.ctx, func() { conn.Close() })
	defer stop()
	if t := o.s.plain.ResponseHeaderTimeout; t > 0 {
		conn.SetDeadline(time.Now().Add(t))
	}
	if err := req.Write(conn); err != nil {
		return 0, false, nil
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil || !wholeAnswer(resp, req, o.pos, m, o.info.Size) {
		return 0, false, nil
	}
	conn.SetDeadline(time.Time{})

	// What the header's read took of the body goes first, the rest socket
	// to socket.
	if k := min(int64(br.Buffered()), m); k > 0 {
		head, _ := br.Peek(int(k))
		nw, err := w.Write(head)
		written += int64(nw)
		if err != nil {
			return written, true, fmt.Errorf("s3: copy %s: write: %w", o.key, err)
		}
	}
	nr, err := rf.ReadFrom(&io.LimitedReader{R: conn, N: m - written})
	written += nr
	// splice(2) does not say which side failed; a failure of the writer
	// (the client went away) reads as one of the store, as it would for a
	// Read that ends its request early.
	switch {
	case written == m && err == nil:
	case o.ctx.Err() != nil:
		err = o.s.translate("read", o.key, o.ctx.Err())
	case err != nil:
		err = o.s.translate("read", o.key, err)
	default:
		err = o.s.translate("read", o.key, io.ErrUnexpectedEOF)
	}
	return written, true, err
}

// spliceRequest is a GET of the m bytes from o.pos, pinned to the version
// that Open read, signed in its URL (presigned, locally), as a request
// written to a raw connection needs. It fails when there are no
// credentials to sign with, or the transport would go through a proxy.
func (o *object) spliceRequest(m int64) (*http.Request, error) {
	hdr := make(http.Header)
	if o.etag != "" {
		hdr.Set("If-Match", `"`+o.etag+`"`)
	}
	if o.pos > 0 || m < o.info.Size {
		hdr.Set("Range", "bytes="+strconv.FormatInt(o.pos, 10)+"-"+strconv.FormatInt(o.pos+m-1, 10))
	}
	u, err := o.s.client.PresignHeader(o.ctx, http.MethodGet, o.s.bucket, o.name, spliceExpiry, nil, hdr)
	if err != nil {
		return nil, fmt.Errorf("s3: sign %s: %w", o.key, err)
	}
	req, err := http.NewRequestWithContext(o.ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("s3: sign %s: %w", o.key, err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Close = true
	if o.s.plain.Proxy != nil {
		if p, err := o.s.plain.Proxy(req); err != nil || p != nil {
			return nil, fmt.Errorf("s3: %s goes through a proxy", o.s.endpoint)
		}
	}
	return req, nil
}

// wholeAnswer reports whether resp is the plain answer to req for the m
// bytes from pos of an object of size bytes: 200 or 206 for exactly that
// range, with a Content-Length and no transfer coding to undo.
func wholeAnswer(resp *http.Response, req *http.Request, pos, m, size int64) bool {
	if resp.ContentLength != m || len(resp.TransferEncoding) != 0 {
		return false
	}
	if req.Header.Get("Range") == "" {
		return resp.StatusCode == http.StatusOK
	}
	want := "bytes " + strconv.FormatInt(pos, 10) + "-" + strconv.FormatInt(pos+m-1, 10) + "/" + strconv.FormatInt(size, 10)
	return resp.StatusCode == http.StatusPartialContent && resp.Header.Get("Content-Range") == want
}
