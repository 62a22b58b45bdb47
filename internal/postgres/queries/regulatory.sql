-- name: InsertRegulatoryAddress :one
INSERT INTO regulatory_addresses (id, project, country_code, locality, postal_code, street_address, extended_address,
    administrative_area, business_name, first_name, last_name, status, created_at, updated_at)
VALUES (@id, @project, @country_code, @locality, @postal_code, @street_address, @extended_address,
    @administrative_area, @business_name, @first_name, @last_name, 'pending', @now, @now)
RETURNING *;

-- name: GetRegulatoryAddress :one
SELECT * FROM regulatory_addresses WHERE id = @id AND project = @project;

-- name: ListRegulatoryAddresses :many
SELECT * FROM regulatory_addresses
WHERE project = @project
  AND (sqlc.narg(before_time)::timestamptz IS NULL OR (created_at, id) < (sqlc.narg(before_time), sqlc.narg(before_id)::text))
ORDER BY created_at DESC, id DESC
LIMIT @max_rows;

-- name: DeleteRegulatoryAddress :execrows
-- An address a provider has (a bundle used it) is in use: it stays.
DELETE FROM regulatory_addresses WHERE id = @id AND project = @project AND provider_sid IS NULL;

-- name: InsertRegulatoryUpload :one
INSERT INTO regulatory_uploads (id, project, token_hash, expires_at, created_at)
VALUES (@id, @project, @token_hash, @expires_at, @now)
RETURNING *;

-- name: TakeRegulatoryUpload :one
-- Takes an upload URL's token, once, before it expires: the file goes with it.
UPDATE regulatory_uploads SET uploaded_at = @now::timestamptz, mime_type = @mime_type
WHERE token_hash = @token_hash AND uploaded_at IS NULL AND expires_at > @now
RETURNING *;

-- name: RegulatoryUploadByToken :one
SELECT * FROM regulatory_uploads WHERE token_hash = @token_hash;

-- name: InsertRegulatoryFileChunk :exec
INSERT INTO regulatory_file_chunks (upload, seq, data) VALUES (@upload, @seq, @data);

-- name: FinishRegulatoryUpload :exec
UPDATE regulatory_uploads SET size_bytes = @size_bytes, sha256 = @sha256 WHERE id = @id;

-- name: GetRegulatoryUpload :one
SELECT * FROM regulatory_uploads WHERE id = @id AND project = @project;

-- name: RegulatoryFileChunks :many
SELECT data FROM regulatory_file_chunks WHERE upload = @upload ORDER BY seq;

-- name: DeleteExpiredRegulatoryUploads :many
-- Upload URLs never used, and files no document took, once they are a day past their expiry.
DELETE FROM regulatory_uploads u
WHERE u.expires_at < @before
  AND NOT EXISTS (SELECT 1 FROM regulatory_documents d WHERE d.upload = u.id)
RETURNING u.id, (u.uploaded_at IS NOT NULL)::boolean AS had_file;

-- name: InsertRegulatoryDocument :one
INSERT INTO regulatory_documents (id, project, document_type, name, upload, mime_type, file_size, status, created_at, updated_at)
VALUES (@id, @project, @document_type, @name, @upload, @mime_type, @file_size, 'uploaded', @now, @now)
ON CONFLICT (upload) DO NOTHING
RETURNING *;

-- name: GetRegulatoryDocument :one
SELECT * FROM regulatory_documents WHERE id = @id AND project = @project;

-- name: ListRegulatoryDocuments :many
SELECT * FROM regulatory_documents
WHERE project = @project
  AND (sqlc.narg(before_time)::timestamptz IS NULL OR (created_at, id) < (sqlc.narg(before_time), sqlc.narg(before_id)::text))
ORDER BY created_at DESC, id DESC
LIMIT @max_rows;

-- name: DeleteRegulatoryDocument :one
-- A verified document stays (a bundle rests on it); the file goes with the document.
DELETE FROM regulatory_documents WHERE id = @id AND project = @project AND status <> 'verified'
RETURNING upload;

-- name: DeleteRegulatoryUpload :exec
DELETE FROM regulatory_uploads WHERE id = @id;

-- name: BundleAddress :one
-- The project's newest address of a country that no review rejected.
SELECT * FROM regulatory_addresses WHERE project = @project AND country_code = @country_code AND status <> 'rejected'
ORDER BY created_at DESC LIMIT 1;

-- name: BundleDocuments :many
-- The project's documents of the types that no review rejected, newest first.
SELECT * FROM regulatory_documents WHERE project = @project AND document_type = ANY(@types::text[]) AND status <> 'rejected'
ORDER BY created_at DESC;

-- name: ReviewRegulatoryAddress :exec
UPDATE regulatory_addresses SET status = @status, provider_sid = coalesce(provider_sid, sqlc.narg(provider_sid)), updated_at = @now
WHERE id = @id AND project = @project;

-- name: ReviewRegulatoryDocuments :exec
UPDATE regulatory_documents SET status = @status, rejection_reason = sqlc.narg(rejection_reason),
    provider_sid = coalesce(provider_sid, sqlc.narg(provider_sid)), updated_at = @now
WHERE project = @project AND id = ANY(@ids::text[]);
