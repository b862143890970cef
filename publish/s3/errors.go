package s3

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/wharfhq/wharf/publish"
)

// abortTimeout bounds the clean-up of a failed multipart upload.
const abortTimeout = 30 * time.Second

// translatePut is translate for a Put: If-Match on an object that is gone
// is a lost precondition too.
func (s *Store) translatePut(key string, opts publish.PutOptions, err error) error {
	var resp minio.ErrorResponse
	if opts.IfMatch != "" && errors.As(err, &resp) && (resp.Code == "NoSuchKey" || resp.StatusCode == http.StatusNotFound && resp.Code != "NoSuchBucket") {
		return fmt.Errorf("s3: put %s: %w: the object is gone", key, publish.ErrPreconditionFailed)
	}
	return s.translate("put", key, err)
}

// translate turns a minio-go or network error into one of the publish
// errors, or into a message that says what to fix. The original error stays
// in the chain.
func (s *Store) translate(op, key string, err error) error {
	where := s.String()
	if key != "" {
		where = "s3://" + s.bucket + "/" + s.prefix + key
	}
	wrap := func(sentinel error, format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		if sentinel == nil {
			return fmt.Errorf("s3: %s %s: %s: %w", op, where, msg, err)
		}
		if msg != "" {
			return fmt.Errorf("s3: %s %s: %w: %s: %w", op, where, sentinel, msg, err)
		}
		return fmt.Errorf("s3: %s %s: %w: %w", op, where, sentinel, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("s3: %s %s: %w", op, where, err)
	}
	if errors.Is(err, publish.ErrChecksumMismatch) {
		return fmt.Errorf("s3: %s %s: %w", op, where, err)
	}
	var resp minio.ErrorResponse
	if errors.As(err, &resp) {
		switch resp.Code {
		case "NoSuchKey", "NoSuchObject", "NoSuchVersion":
			return wrap(publish.ErrNotFound, "")
		case "PreconditionFailed":
			return wrap(publish.ErrPreconditionFailed, "")
		case "NoSuchBucket":
			return wrap(nil, "bucket %q does not exist at %s (create it, or check the bucket name and --s3-endpoint)", s.bucket, s.endpoint)
		case "AccessDenied", "AllAccessDisabled":
			if s.anonymous() {
				return wrap(nil, "access denied to an unsigned request: no credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE, or run with an instance role)")
			}
			return wrap(nil, "access denied: the credentials (AWS_ACCESS_KEY_ID) lack permission for this object; the policy needs s3:GetObject, s3:PutObject and s3:ListBucket on bucket %q", s.bucket)
		case "InvalidAccessKeyId":
			return wrap(nil, "the access key in AWS_ACCESS_KEY_ID is not known to %s (check the key, and that --s3-endpoint is the right server)", s.endpoint)
		case "SignatureDoesNotMatch":
			return wrap(nil, "the request signature does not match: check AWS_SECRET_ACCESS_KEY for this access key")
		case "ExpiredToken", "InvalidToken", "TokenRefreshRequired":
			return wrap(nil, "the session token in AWS_SESSION_TOKEN is expired or invalid; get fresh credentials")
		case "AuthorizationHeaderMalformed", "AuthorizationQueryParametersError", "IllegalLocationConstraintException", "PermanentRedirect":
			hint := "set AWS_REGION to the bucket's region"
			if resp.Region != "" {
				hint = fmt.Sprintf("the bucket is in region %s: set AWS_REGION=%s", resp.Region, resp.Region)
			}
			return wrap(nil, "wrong region: %s", hint)
		case "BadDigest", "InvalidDigest", "XAmzContentChecksumMismatch", "XAmzContentSHA256Mismatch", "InvalidChecksum":
			return wrap(publish.ErrChecksumMismatch, "the content does not match its SHA-256; nothing was written")
		case "SlowDown", "ServiceUnavailable", "InternalError", "XMinioServerNotInitialized", "XMinioStorageFull", "RequestTimeout", "XMinioReadQuorum", "XMinioWriteQuorum":
			return wrap(publish.ErrUnavailable, "%s is unavailable (%s); try again later", s.endpoint, resp.Code)
		}
		switch {
		case resp.StatusCode == http.StatusNotFound && key != "":
			return wrap(publish.ErrNotFound, "")
		case resp.StatusCode == http.StatusPreconditionFailed:
			return wrap(publish.ErrPreconditionFailed, "")
		case resp.StatusCode == http.StatusForbidden:
			return wrap(nil, "access denied (%s): check the credentials and the bucket policy", resp.Code)
		case resp.StatusCode >= 500:
			return wrap(publish.ErrUnavailable, "%s answered %d %s; try again later", s.endpoint, resp.StatusCode, resp.Code)
		}
		return wrap(nil, "%s answered %s", s.endpoint, resp.Code)
	}
	var unknownAuthority x509.UnknownAuthorityError
	var certInvalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	if errors.As(err, &unknownAuthority) || errors.As(err, &certInvalid) || errors.As(err, &hostname) {
		return wrap(nil, "TLS: the certificate of %s is not trusted (add its CA to AWS_CA_BUNDLE, or use an http:// endpoint for a local server)", s.endpoint)
	}
	switch msg := err.Error(); {
	case strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		return wrap(nil, "%s answers plain HTTP: write the endpoint as http://host:port", s.endpoint)
	case strings.Contains(msg, "Client sent an HTTP request to an HTTPS server"):
		return wrap(nil, "%s answers HTTPS: write the endpoint as https://host:port or host:port", s.endpoint)
	}
	if unavailable(err) {
		return wrap(publish.ErrUnavailable, "cannot reach %s", s.endpoint)
	}
	return fmt.Errorf("s3: %s %s: %w", op, where, err)
}

// unavailable reports network failures worth a retry later: refused or
// reset connections, timeouts, a server that went away mid-answer.
func unavailable(err error) bool {
	var ne net.Error
	var op *net.OpError
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return true
	case errors.As(err, &ne) && ne.Timeout():
		return true
	case errors.As(err, &op), errors.As(err, &dns):
		return true
	}
	// minio-go replaces an EOF from a server that went away with its own
	// "Connection closed by foreign host" error; it knows its messages.
	return minio.IsNetworkOrHostDown(err, true)
}
