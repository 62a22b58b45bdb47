package regulatory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Where documents' files are kept: in Postgres (chunks of regulatory_file_chunks, the default)
// or in an S3-compatible bucket an installation configures (--document-store).

// Store keeps documents' files by their upload's id.
type Store interface {
	// Put keeps data under id, inside tx when the store is Postgres (the upload's transaction).
	Put(ctx context.Context, tx pgx.Tx, id, contentType string, data []byte) error
	Get(ctx context.Context, id string) ([]byte, error)
	// Delete forgets id's file; a file that is not there is forgotten already.
	Delete(ctx context.Context, id string) error
}

// Postgres keeps files in regulatory_file_chunks (the upload row's cascade deletes them).
type Postgres struct{ Pool db.DBTX }

// Put implements Store.
func (p Postgres) Put(ctx context.Context, tx pgx.Tx, id, _ string, data []byte) error {
	q := db.Planned(tx)
	for seq, off := int32(0), 0; off < len(data); seq, off = seq+1, off+chunkSize {
		if err := q.InsertRegulatoryFileChunk(ctx, db.InsertRegulatoryFileChunkParams{Upload: id, Seq: seq,
			Data: data[off:min(off+chunkSize, len(data))]}); err != nil {
			return err
		}
	}
	return nil
}

// Get implements Store.
func (p Postgres) Get(ctx context.Context, id string) ([]byte, error) {
	chunks, err := db.Planned(p.Pool).RegulatoryFileChunks(ctx, id)
	if err != nil {
		return nil, err
	}
	return bytes.Join(chunks, nil), nil
}

// Delete implements Store: the chunks go with their upload row.
func (p Postgres) Delete(context.Context, string) error { return nil }

// S3 keeps files as objects <prefix><id> of a bucket, through minio-go (any S3-compatible
// service: AWS S3, MinIO, Ceph, R2).
type S3 struct {
	client         *minio.Client
	bucket, prefix string
}

// OpenS3 reads a store URL: s3://bucket/prefix?endpoint=host:port&region=r&insecure=true
// (endpoint defaults to s3.amazonaws.com; insecure talks plain HTTP). The credentials are the
// environment's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), never in
// the URL.
func OpenS3(raw string) (*S3, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return nil, fmt.Errorf("document store %q: want s3://bucket/prefix?endpoint=host:port", raw)
	}
	if u.User != nil {
		return nil, errors.New("document store: credentials go in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, not in the URL")
	}
	q := u.Query()
	endpoint := q.Get("endpoint")
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	creds := credentials.NewStaticV4(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN"))
	c, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: q.Get("insecure") != "true", Region: q.Get("region")})
	if err != nil {
		return nil, fmt.Errorf("document store: %w", err)
	}
	prefix := strings.TrimPrefix(u.Path, "/")
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &S3{client: c, bucket: u.Host, prefix: prefix}, nil
}

// Put implements Store.
func (s *S3) Put(ctx context.Context, _ pgx.Tx, id, contentType string, data []byte) error {
	_, err := s.client.PutObject(ctx, s.bucket, s.prefix+id, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: contentType})
	if err != nil {
		return fmt.Errorf("store the file of %s: %w", id, err)
	}
	return nil
}

// Get implements Store.
func (s *S3) Get(ctx context.Context, id string) ([]byte, error) {
	obj, err := s.client.GetObject(ctx, s.bucket, s.prefix+id, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("read the file of %s: %w", id, err)
	}
	defer obj.Close()
	data, err := io.ReadAll(obj)
	if err != nil {
		return nil, fmt.Errorf("read the file of %s: %w", id, err)
	}
	return data, nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, id string) error {
	err := s.client.RemoveObject(ctx, s.bucket, s.prefix+id, minio.RemoveObjectOptions{})
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return nil
	}
	return err
}
