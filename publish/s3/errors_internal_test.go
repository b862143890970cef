package s3

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/wharfhq/wharf/publish"
)

// TestTranslate is the table of S3 and network failures and what a user
// reads about them (goreleaser blob/upload.go handleError style).
func TestTranslate(t *testing.T) {
	env := map[string]string{"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret"}
	s, err := newStore("s3://releases/tree", Options{Endpoint: "http://127.0.0.1:9000", Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	s3err := func(code string, status int) error {
		return minio.ErrorResponse{Code: code, StatusCode: status, Message: "server says " + code}
	}
	refused := &url.Error{Op: "Put", URL: "http://127.0.0.1:9000/releases", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	tests := []struct {
		name     string
		err      error
		sentinel error    // errors.Is must hold, nil for none of the publish errors
		msg      []string // substrings of the message
	}{
		{"NoSuchKey", s3err("NoSuchKey", 404), publish.ErrNotFound, []string{"get s3://releases/tree/latest", "not found"}},
		{"404 without code", s3err("", 404), publish.ErrNotFound, nil},
		{"PreconditionFailed", s3err("PreconditionFailed", 412), publish.ErrPreconditionFailed, nil},
		{"412 without code", s3err("", 412), publish.ErrPreconditionFailed, nil},
		{"NoSuchBucket", s3err("NoSuchBucket", 404), nil, []string{`bucket "releases" does not exist at http://127.0.0.1:9000`, "--s3-endpoint"}},
		{"AccessDenied", s3err("AccessDenied", 403), nil, []string{"access denied", "AWS_ACCESS_KEY_ID", "s3:PutObject"}},
		{"403 other", s3err("AccountProblem", 403), nil, []string{"access denied (AccountProblem)"}},
		{"InvalidAccessKeyId", s3err("InvalidAccessKeyId", 403), nil, []string{"AWS_ACCESS_KEY_ID is not known to http://127.0.0.1:9000"}},
		{"SignatureDoesNotMatch", s3err("SignatureDoesNotMatch", 403), nil, []string{"AWS_SECRET_ACCESS_KEY"}},
		{"ExpiredToken", s3err("ExpiredToken", 400), nil, []string{"AWS_SESSION_TOKEN"}},
		{"wrong region", minio.ErrorResponse{Code: "AuthorizationHeaderMalformed", StatusCode: 400, Region: "eu-west-1"}, nil, []string{"AWS_REGION=eu-west-1"}},
		{"BadDigest", s3err("BadDigest", 400), publish.ErrChecksumMismatch, []string{"nothing was written"}},
		{"XAmzContentChecksumMismatch", s3err("XAmzContentChecksumMismatch", 400), publish.ErrChecksumMismatch, nil},
		{"InvalidChecksum", s3err("InvalidChecksum", 400), publish.ErrChecksumMismatch, nil},
		{"SlowDown", s3err("SlowDown", 503), publish.ErrUnavailable, []string{"try again later"}},
		{"InternalError", s3err("InternalError", 500), publish.ErrUnavailable, nil},
		{"502", s3err("", 502), publish.ErrUnavailable, []string{"answered 502"}},
		{"server not initialized", s3err("XMinioServerNotInitialized", 503), publish.ErrUnavailable, nil},
		{"connection refused", refused, publish.ErrUnavailable, []string{"cannot reach http://127.0.0.1:9000", "connection refused"}},
		{"connection reset", fmt.Errorf("read: %w", syscall.ECONNRESET), publish.ErrUnavailable, nil},
		{"server gone mid-answer", io.ErrUnexpectedEOF, publish.ErrUnavailable, nil},
		{"server gone before the answer", &url.Error{Op: "Put", URL: "http://127.0.0.1:9000/x", Err: errors.New("Connection closed by foreign host http://127.0.0.1:9000/x. Retry again.")}, publish.ErrUnavailable, nil},
		{"https to an http server", &url.Error{Op: "Get", URL: "https://127.0.0.1:9000/x", Err: errors.New("http: server gave HTTP response to HTTPS client")}, nil, []string{"write the endpoint as http://host:port"}},
		{"timeout", &url.Error{Op: "Get", URL: "x", Err: timeoutError{}}, publish.ErrUnavailable, nil},
		{"dns", &net.DNSError{Err: "no such host", Name: "minio.invalid", IsNotFound: true}, publish.ErrUnavailable, nil},
		{"untrusted certificate", &url.Error{Op: "Get", URL: "x", Err: &tlsVerifyError{x509.UnknownAuthorityError{}}}, nil, []string{"AWS_CA_BUNDLE"}},
		{"canceled", fmt.Errorf("put: %w", context.Canceled), context.Canceled, nil},
		{"other", errors.New("boom"), nil, []string{"boom"}},
	}
	sentinels := []error{publish.ErrNotFound, publish.ErrPreconditionFailed, publish.ErrUnavailable, publish.ErrChecksumMismatch, publish.ErrInvalidKey}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.translate("get", "latest", tt.err)
			if tt.sentinel != nil && !errors.Is(got, tt.sentinel) {
				t.Errorf("translate = %v, want errors.Is %v", got, tt.sentinel)
			}
			for _, sen := range sentinels {
				if sen != tt.sentinel && errors.Is(got, sen) {
					t.Errorf("translate = %v, unexpectedly errors.Is %v", got, sen)
				}
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("translate = %v lost the original error %v", got, tt.err)
			}
			for _, m := range tt.msg {
				if !strings.Contains(got.Error(), m) {
					t.Errorf("translate = %q, want it to contain %q", got, m)
				}
			}
		})
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// tlsVerifyError wraps a certificate error as crypto/tls does.
type tlsVerifyError struct{ err error }

func (e *tlsVerifyError) Error() string { return "tls: " + e.err.Error() }
func (e *tlsVerifyError) Unwrap() error { return e.err }

func TestTranslatePutIfMatchGone(t *testing.T) {
	s, err := newStore("s3://releases", Options{Endpoint: "http://127.0.0.1:9000", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	got := s.translatePut("latest", publish.PutOptions{IfMatch: `"abc"`}, minio.ErrorResponse{Code: "NoSuchKey", StatusCode: http.StatusNotFound})
	if !errors.Is(got, publish.ErrPreconditionFailed) {
		t.Errorf("IfMatch on a missing object: %v, want ErrPreconditionFailed", got)
	}
	got = s.translatePut("latest", publish.PutOptions{}, minio.ErrorResponse{Code: "NoSuchBucket", StatusCode: http.StatusNotFound})
	if errors.Is(got, publish.ErrPreconditionFailed) || errors.Is(got, publish.ErrNotFound) {
		t.Errorf("NoSuchBucket on put: %v, want a plain error", got)
	}
}

func TestCompositeSHA256(t *testing.T) {
	// S3's documented composite: base64(sha256(sum1 || sum2)) + "-2".
	a := []byte(strings.Repeat("a", 32))
	b := []byte(strings.Repeat("b", 32))
	got := compositeSHA256([][]byte{a, b})
	if want := "/dKmTQFPLEBtLs5nwjISqSs1YxT03rQrJMOVKW7jBNI=-2"; got != want {
		t.Errorf("compositeSHA256 = %s, want %s", got, want)
	}
}
