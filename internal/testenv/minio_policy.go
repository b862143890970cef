package testenv

import (
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// SetBucketPolicy applies an S3 bucket policy (JSON) to a bucket of m as
// its root user, the way `aws s3api put-bucket-policy` or
// `mc anonymous set-json` would.
func (m *MinIO) SetBucketPolicy(tb testing.TB, bucket, policy string) {
	tb.Helper()
	c, err := minio.New(m.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(m.AccessKey, m.SecretKey, ""), Region: "us-east-1"})
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.SetBucketPolicy(tb.Context(), bucket, policy); err != nil {
		tb.Fatalf("set the policy of bucket %s: %v", bucket, err)
	}
}
