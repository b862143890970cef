package testenv

import (
	"io"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// client is a client of m as its root user.
func (m *MinIO) client(tb testing.TB) *minio.Client {
	tb.Helper()
	c, err := minio.New(m.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(m.AccessKey, m.SecretKey, ""), Region: "us-east-1"})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// SetBucketPolicy applies an S3 bucket policy (JSON) to a bucket of m as
// its root user, the way `aws s3api put-bucket-policy` or
// `mc anonymous set-json` would.
func (m *MinIO) SetBucketPolicy(tb testing.TB, bucket, policy string) {
	tb.Helper()
	if err := m.client(tb).SetBucketPolicy(tb.Context(), bucket, policy); err != nil {
		tb.Fatalf("set the policy of bucket %s: %v", bucket, err)
	}
}

// Objects reads every object of a bucket of m under prefix, as its root
// user: key to bytes.
func (m *MinIO) Objects(tb testing.TB, bucket, prefix string) map[string][]byte {
	tb.Helper()
	c := m.client(tb)
	out := map[string][]byte{}
	for info := range c.ListObjects(tb.Context(), bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if info.Err != nil {
			tb.Fatalf("list %s/%s: %v", bucket, prefix, info.Err)
		}
		obj, err := c.GetObject(tb.Context(), bucket, info.Key, minio.GetObjectOptions{})
		if err != nil {
			tb.Fatalf("get %s: %v", info.Key, err)
		}
		b, err := io.ReadAll(obj)
		obj.Close()
		if err != nil {
			tb.Fatalf("read %s: %v", info.Key, err)
		}
		out[info.Key] = b
	}
	return out
}
