// Package s3 is a publish.Store on an S3 bucket (AWS S3, MinIO or any S3
// API) through minio-go. It is the only package of wharf that imports
// minio-go.
//
// Writes are single PUTs for objects up to Options.PartSize and parallel
// multipart uploads above, always with an x-amz-checksum-sha256 the server
// verifies; conditional writes use If-Match and If-None-Match, which S3 and
// MinIO evaluate atomically with the write. See docs/s3.md for the checksum
// scheme.
package s3

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/wharfhq/wharf/publish"
)

// Defaults and limits of Options.
const (
	DefaultPartSize    = 16 << 20 // bytes per multipart part
	MinPartSize        = 5 << 20  // the S3 minimum for every part but the last
	DefaultConcurrency = 4        // parts in flight per store
	maxParts           = 10000    // the S3 maximum number of parts
)

// Options configure a Store. The zero value talks to AWS S3 with
// credentials from the environment.
type Options struct {
	// Endpoint is host:port or a URL of an S3 API; http:// means plain
	// HTTP. Empty means $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, or AWS S3.
	// A custom endpoint is addressed path-style (bucket in the path).
	Endpoint string
	// Region is the bucket's region; empty means $AWS_REGION,
	// $AWS_DEFAULT_REGION, or the region the server reports.
	Region string
	// PartSize is the size of a multipart part and the largest object sent
	// in one PUT; 0 means DefaultPartSize, less than MinPartSize is refused.
	PartSize uint64
	// Concurrency is the number of parts the store uploads at once, over all
	// concurrent Puts, while one more is read; 0 means DefaultConcurrency. Memory for uploads is
	// bounded by (Concurrency+1) * PartSize (objects over 10000 parts, 156
	// GiB with the default, get larger parts).
	Concurrency uint
	// MaxRetries is how many times a failed request is tried in all, with
	// backoff, before Put or Open report ErrUnavailable; 0 means minio-go's
	// default (10).
	MaxRetries int
	// Getenv reads the environment (AWS_* credentials, region, endpoint and
	// AWS_CA_BUNDLE); nil means os.Getenv. The fallback credential
	// providers (MINIO_*, ~/.aws, ~/.mc, the instance role) read the process
	// environment.
	Getenv func(string) string
}

// Store is a publish.Store on a bucket and key prefix. It is safe for
// concurrent use.
type Store struct {
	client   *minio.Client
	core     minio.Core
	creds    *credentials.Credentials
	bucket   string
	prefix   string // "" or ends in "/"
	endpoint string // scheme://host, for messages
	region   string
	partSize int
	bufs     *bufferPool
}

var (
	_ publish.Store     = (*Store)(nil)
	_ publish.Presigner = (*Store)(nil)
)

// Open returns a Store for rawurl, s3://bucket or s3://bucket/prefix. It
// checks that the bucket exists and the credentials are accepted, so a
// wrong name or key fails here with a message a user can act on.
func Open(ctx context.Context, rawurl string, opts Options) (*Store, error) {
	s, err := newStore(rawurl, opts)
	if err != nil {
		return nil, err
	}
	if err := s.Check(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// OpenLazy returns a Store for rawurl without contacting the server: a
// server (wharf serve) starts while the store is unreachable, answers 503
// and recovers when it is back. Check tells whether it is there.
func OpenLazy(rawurl string, opts Options) (*Store, error) {
	return newStore(rawurl, opts)
}

var _ publish.Checker = (*Store)(nil)

// Check reports whether the bucket exists and the credentials are
// accepted, with a message a user can act on.
func (s *Store) Check(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return s.translate("open", "", err)
	}
	if !ok {
		return fmt.Errorf("s3: open s3://%s/%s: %w: bucket %q does not exist at %s (create it, or check the name and --s3-endpoint)", s.bucket, s.prefix, publish.ErrUnavailable, s.bucket, s.endpoint)
	}
	return nil
}

// MakeBucket creates the bucket of rawurl if it does not exist yet. wharf
// publish never creates buckets; setup scripts and tests do.
func MakeBucket(ctx context.Context, rawurl string, opts Options) error {
	s, err := newStore(rawurl, opts)
	if err != nil {
		return err
	}
	err = s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{Region: s.region})
	if err != nil {
		var resp minio.ErrorResponse
		if errors.As(err, &resp) && (resp.Code == "BucketAlreadyOwnedByYou" || resp.Code == "BucketAlreadyExists") {
			return nil
		}
		return s.translate("make bucket", "", err)
	}
	return nil
}

// ParseURL splits s3://bucket[/prefix] into the bucket and the key prefix
// ("" or ending in "/").
func ParseURL(rawurl string) (bucket, prefix string, err error) {
	u, err := url.Parse(rawurl)
	if err != nil {
		return "", "", fmt.Errorf("s3: store %q: %w", rawurl, err)
	}
	if u.Scheme != "s3" {
		return "", "", fmt.Errorf("s3: store %q: want s3://bucket[/prefix]", rawurl)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", "", fmt.Errorf("s3: store %q: want s3://bucket[/prefix] without credentials, query or fragment (credentials come from AWS_* variables)", rawurl)
	}
	bucket = u.Host
	if !validBucket(bucket) {
		return "", "", fmt.Errorf("s3: store %q: bucket %q is not a valid S3 bucket name (3-63 lowercase letters, digits, dots and dashes)", rawurl, bucket)
	}
	prefix = strings.Trim(u.Path, "/")
	if prefix != "" {
		if err := publish.CheckKey(prefix); err != nil {
			return "", "", fmt.Errorf("s3: store %q: prefix: %w", rawurl, err)
		}
		prefix += "/"
	}
	return bucket, prefix, nil
}

func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 {
		return false
	}
	for i, r := range b {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || (r == '-' || r == '.') && i > 0 && i < len(b)-1
		if !ok {
			return false
		}
	}
	return !strings.Contains(b, "..")
}

func newStore(rawurl string, opts Options) (*Store, error) {
	bucket, prefix, err := ParseURL(rawurl)
	if err != nil {
		return nil, err
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	partSize := opts.PartSize
	if partSize == 0 {
		partSize = DefaultPartSize
	}
	if partSize < MinPartSize || partSize > 1<<30 {
		return nil, fmt.Errorf("s3: part size %d: want between %d (5 MiB) and %d (1 GiB)", partSize, MinPartSize, 1<<30)
	}
	conc := opts.Concurrency
	if conc == 0 {
		conc = DefaultConcurrency
	}
	endpoint := firstNonEmpty(opts.Endpoint, getenv("AWS_ENDPOINT_URL_S3"), getenv("AWS_ENDPOINT_URL"))
	host, secure, custom, err := parseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	tr, err := transport(secure, getenv("AWS_CA_BUNDLE"))
	if err != nil {
		return nil, err
	}
	creds := credentialsFrom(getenv)
	mo := &minio.Options{
		Creds:           creds,
		Secure:          secure,
		Transport:       tr,
		Region:          firstNonEmpty(opts.Region, getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION")),
		TrailingHeaders: true,
		MaxRetries:      opts.MaxRetries,
	}
	if custom {
		mo.BucketLookup = minio.BucketLookupPath
	}
	client, err := minio.New(host, mo)
	if err != nil {
		return nil, fmt.Errorf("s3: endpoint %q: %w", endpoint, err)
	}
	scheme := "https://"
	if !secure {
		scheme = "http://"
	}
	return &Store{
		client:   client,
		core:     minio.Core{Client: client},
		creds:    creds,
		bucket:   bucket,
		prefix:   prefix,
		endpoint: scheme + host,
		region:   mo.Region,
		partSize: int(partSize),
		bufs:     newBufferPool(int(conc)+1, int(partSize)),
	}, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// parseEndpoint accepts host:port, http://host:port or https://host:port.
// A bare host:port is HTTPS. custom reports an endpoint other than AWS.
func parseEndpoint(endpoint string) (host string, secure, custom bool, err error) {
	if endpoint == "" {
		return "s3.amazonaws.com", true, false, nil
	}
	secure = true
	if strings.Contains(endpoint, "://") {
		u, perr := url.Parse(endpoint)
		if perr != nil {
			return "", false, false, fmt.Errorf("s3: endpoint %q: %w", endpoint, perr)
		}
		switch u.Scheme {
		case "http":
			secure = false
		case "https":
		default:
			return "", false, false, fmt.Errorf("s3: endpoint %q: scheme must be http or https", endpoint)
		}
		if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.User != nil {
			return "", false, false, fmt.Errorf("s3: endpoint %q: want scheme://host[:port] without a path", endpoint)
		}
		endpoint = u.Host
	}
	if endpoint == "" || strings.ContainsAny(endpoint, "/?#@ ") {
		return "", false, false, fmt.Errorf("s3: endpoint %q: want host:port or http(s)://host:port", endpoint)
	}
	custom = !strings.HasSuffix(endpoint, ".amazonaws.com") && !strings.HasSuffix(endpoint, ".amazonaws.com.cn")
	return endpoint, secure, custom, nil
}

// transport is minio-go's default transport; for HTTPS it trusts the system
// roots plus AWS_CA_BUNDLE when set, as the AWS SDKs do. Plain HTTP ignores
// the bundle.
func transport(secure bool, caBundle string) (http.RoundTripper, error) {
	tr, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("s3: transport: %w", err)
	}
	if !secure || caBundle == "" {
		return tr, nil
	}
	pem, err := os.ReadFile(caBundle)
	if err != nil {
		return nil, fmt.Errorf("s3: AWS_CA_BUNDLE: %w", err)
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("s3: AWS_CA_BUNDLE %s: no PEM certificates in the file", caBundle)
	}
	if tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tr.TLSClientConfig.RootCAs = roots
	return tr, nil
}

// credentialsFrom is the usual chain: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY
// (and AWS_SESSION_TOKEN) read through getenv, then MinIO's MINIO_* variables,
// the shared AWS credentials file, the mc config, and the instance role.
func credentialsFrom(getenv func(string) string) *credentials.Credentials {
	return credentials.NewChainCredentials([]credentials.Provider{
		&envAWS{getenv: getenv},
		&credentials.EnvMinio{},
		&credentials.FileAWSCredentials{},
		&credentials.FileMinioClient{},
		&credentials.IAM{},
	})
}

// envAWS is credentials.EnvAWS reading through a getenv function.
type envAWS struct {
	getenv func(string) string
}

func (e *envAWS) Retrieve() (credentials.Value, error) {
	id := firstNonEmpty(e.getenv("AWS_ACCESS_KEY_ID"), e.getenv("AWS_ACCESS_KEY"))
	secret := firstNonEmpty(e.getenv("AWS_SECRET_ACCESS_KEY"), e.getenv("AWS_SECRET_KEY"))
	if id == "" || secret == "" {
		// Let the chain try the next provider.
		return credentials.Value{SignerType: credentials.SignatureAnonymous}, errors.New("AWS_ACCESS_KEY_ID or AWS_SECRET_ACCESS_KEY not set")
	}
	return credentials.Value{
		AccessKeyID:     id,
		SecretAccessKey: secret,
		SessionToken:    e.getenv("AWS_SESSION_TOKEN"),
		SignerType:      credentials.SignatureV4,
	}, nil
}

func (e *envAWS) RetrieveWithCredContext(*credentials.CredContext) (credentials.Value, error) {
	return e.Retrieve()
}

func (e *envAWS) IsExpired() bool { return false }

// anonymous reports whether the chain found no credentials at all, so the
// requests went unsigned.
func (s *Store) anonymous() bool {
	v, err := s.creds.GetWithContext(&credentials.CredContext{Client: &http.Client{Timeout: 2 * time.Second}})
	return err == nil && v.SignerType.IsAnonymous()
}

// String names the store as s3://bucket or s3://bucket/prefix.
func (s *Store) String() string {
	if s.prefix == "" {
		return "s3://" + s.bucket
	}
	return "s3://" + s.bucket + "/" + strings.TrimSuffix(s.prefix, "/")
}

func (s *Store) objectName(key string) (string, error) {
	if err := publish.CheckKey(key); err != nil {
		return "", fmt.Errorf("s3: %w", err)
	}
	return s.prefix + key, nil
}

// Open opens the object at key with one GET, whose answer carries both
// the object's description and its bytes, so what Info says and what Read
// returns are the same version. After a Seek, reads continue with a ranged
// GET pinned to that version's ETag: if the object was replaced meanwhile,
// Read fails with ErrPreconditionFailed instead of mixing two versions.
func (s *Store) Open(ctx context.Context, key string) (publish.Object, error) {
	name, err := s.objectName(key)
	if err != nil {
		return nil, err
	}
	body, oi, _, err := s.core.GetObject(ctx, s.bucket, name, minio.GetObjectOptions{Checksum: true})
	if err != nil {
		return nil, s.translate("open", key, err)
	}
	return &object{s: s, ctx: ctx, key: key, name: name, info: s.info(key, oi), etag: oi.ETag, body: body}, nil
}

// Stat describes the object at key.
func (s *Store) Stat(ctx context.Context, key string) (publish.ObjectInfo, error) {
	name, err := s.objectName(key)
	if err != nil {
		return publish.ObjectInfo{}, err
	}
	oi, err := s.client.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{Checksum: true})
	if err != nil {
		return publish.ObjectInfo{}, s.translate("stat", key, err)
	}
	return s.info(key, oi), nil
}

// List returns the objects under prefix, sorted by key. Their SHA256 is
// empty: listings carry no checksums; Stat an object for it.
func (s *Store) List(ctx context.Context, prefix string) ([]publish.ObjectInfo, error) {
	if strings.ContainsAny(prefix, "\x00\\") {
		return nil, fmt.Errorf("s3: list %q: %w", prefix, publish.ErrInvalidKey)
	}
	var out []publish.ObjectInfo
	for oi := range s.client.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix, Recursive: true}) {
		if oi.Err != nil {
			return nil, s.translate("list", prefix, oi.Err)
		}
		key := strings.TrimPrefix(oi.Key, s.prefix)
		if publish.CheckKey(key) != nil {
			continue // not something wharf wrote, e.g. a "dir/" marker
		}
		out = append(out, s.info(key, oi))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// PresignGet returns a URL that downloads key for expiry without
// credentials, answering with Content-Disposition: attachment; filename.
func (s *Store) PresignGet(ctx context.Context, key, filename string, expiry time.Duration) (string, error) {
	name, err := s.objectName(key)
	if err != nil {
		return "", err
	}
	params := url.Values{}
	if filename != "" {
		params.Set("response-content-disposition", attachment(filename))
	}
	u, err := s.client.PresignedGetObject(ctx, s.bucket, name, expiry, params)
	if err != nil {
		return "", s.translate("presign", key, err)
	}
	return u.String(), nil
}

// attachment is the Content-Disposition of a download named filename, in
// the form the download server sends: filename quoted. A name that cannot be
// quoted as it is gets mime's RFC 2231 form.
func attachment(filename string) string {
	plain := !strings.ContainsFunc(filename, func(r rune) bool { return r < 0x20 || r >= 0x7f || r == '"' || r == '\\' })
	if plain {
		return `attachment; filename="` + filename + `"`
	}
	return mime.FormatMediaType("attachment", map[string]string{"filename": filename})
}

// metaSHA256 is the user metadata that carries the whole-object SHA-256 of
// a multipart object when the caller gave it in advance (S3 keeps only a
// composite checksum for those).
const metaSHA256 = "Wharf-Sha256"

func (s *Store) info(key string, oi minio.ObjectInfo) publish.ObjectInfo {
	info := publish.ObjectInfo{
		Key:     key,
		Size:    oi.Size,
		ModTime: oi.LastModified,
	}
	if oi.ETag != "" {
		info.ETag = `"` + strings.Trim(oi.ETag, `"`) + `"`
	}
	info.SHA256 = fullSHA256(oi.ChecksumSHA256)
	if info.SHA256 == "" {
		if v := oi.UserMetadata[metaSHA256]; len(v) == 64 {
			info.SHA256 = v
		} else if v := oi.Metadata.Get("X-Amz-Meta-" + metaSHA256); len(v) == 64 {
			info.SHA256 = v
		}
	}
	return info
}

// fullSHA256 turns a whole-object x-amz-checksum-sha256 (base64) into hex;
// a composite multipart checksum ("...-N") gives "".
func fullSHA256(b64 string) string {
	if b64 == "" || strings.Contains(b64, "-") {
		return ""
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != 32 {
		return ""
	}
	return hex.EncodeToString(raw)
}
