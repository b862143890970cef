package s3

import (
	"context"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/wharfhq/wharf/publish"
)

var _ publish.TempCleaner = (*Store)(nil)

// CleanTemp aborts the incomplete multipart uploads that were initiated
// more than age ago: a publish killed in the middle of an image upload
// leaves its parts stored (and billed). Younger ones may belong to a
// publish still running. It lists the uploads under the store's prefix
// (AWS S3) and those of each of keys (MinIO lists the uploads of one
// object name only, and itself drops stale uploads after a day).
func (s *Store) CleanTemp(ctx context.Context, age time.Duration, keys []string) (n int, size int64, err error) {
	cutoff := time.Now().Add(-age)
	seen := map[string]bool{}
	clean := func(prefix string) error {
		for u := range s.client.ListIncompleteUploads(ctx, s.bucket, prefix, true) {
			if u.Err != nil {
				return s.translate("list incomplete uploads", prefix, u.Err)
			}
			if seen[u.UploadID] || !u.Initiated.Before(cutoff) {
				continue
			}
			seen[u.UploadID] = true
			if err := s.core.AbortMultipartUpload(ctx, s.bucket, u.Key, u.UploadID); err != nil {
				if minio.ToErrorResponse(err).Code == "NoSuchUpload" {
					continue // finished or aborted meanwhile
				}
				return s.translate("abort incomplete upload", u.Key, err)
			}
			n++
			size += u.Size
		}
		return nil
	}
	if err := clean(s.prefix); err != nil {
		return n, size, err
	}
	for _, k := range keys {
		name, err := s.objectName(k)
		if err != nil {
			return n, size, err
		}
		if err := clean(name); err != nil {
			return n, size, err
		}
	}
	return n, size, nil
}
