// Package regulatory keeps a project's regulatory records (docs/numbers.md#addresses-and-documents):
// the addresses and identity or business documents some countries ask of whoever buys their
// phone numbers. A document's file is uploaded to a one-time URL on the API (no API key: a
// browser may upload it), and kept in Postgres in chunks.
package regulatory

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/periodic"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Upload limits: how long an upload URL is good for, how large a file may be, and the types
// taken (what regulators accept as scans).
const (
	DefaultUploadTTL = 15 * time.Minute
	MaxFileSize      = 10 << 20
	chunkSize        = 1 << 20
)

// MimeTypes are the files a document may be.
var MimeTypes = []string{"application/pdf", "image/jpeg", "image/png"}

// DocumentTypes are the client's documentType values.
var DocumentTypes = []string{"passport", "national_id", "drivers_license", "utility_bill", "tax_id", "business_registration",
	"proof_of_address", "other"}

// UploadPath is where upload URLs are served, under the API's base URL: the token follows.
const UploadPath = "/v1/documents/uploads/"

// Service keeps the records.
type Service struct {
	Pool *pgxpool.Pool
	// Files keeps documents' files: Postgres when nil.
	Files Store
	// UploadTTL is how long an upload URL is good for (DefaultUploadTTL when zero).
	UploadTTL time.Duration
	Clock     func() time.Time
}

func (s *Service) files() Store {
	if s.Files != nil {
		return s.Files
	}
	return Postgres{Pool: s.Pool}
}

func (s *Service) now() time.Time {
	if s.Clock != nil {
		return s.Clock().UTC()
	}
	return time.Now().UTC()
}

// Address is a regulatory address as the API shows it (the client's Address).
type Address struct {
	ID                 string    `json:"id"`
	CountryCode        string    `json:"countryCode"`
	Locality           string    `json:"locality"`
	PostalCode         string    `json:"postalCode"`
	StreetAddress      string    `json:"streetAddress"`
	ExtendedAddress    *string   `json:"extendedAddress"`
	AdministrativeArea *string   `json:"administrativeArea"`
	BusinessName       *string   `json:"businessName"`
	FirstName          *string   `json:"firstName"`
	LastName           *string   `json:"lastName"`
	Status             string    `json:"status"`
	CreatedAt          time.Time `json:"createdAt"`
	UpdatedAt          time.Time `json:"updatedAt"`
}

// AddressInput is POST /v1/addresses.
type AddressInput struct {
	CountryCode        *string `json:"countryCode"`
	Locality           *string `json:"locality"`
	PostalCode         *string `json:"postalCode"`
	StreetAddress      *string `json:"streetAddress"`
	ExtendedAddress    *string `json:"extendedAddress"`
	AdministrativeArea *string `json:"administrativeArea"`
	BusinessName       *string `json:"businessName"`
	FirstName          *string `json:"firstName"`
	LastName           *string `json:"lastName"`
}

var countryCode = regexp.MustCompile(`^[A-Za-z]{2}$`)

// maxField bounds every text field of an address.
const maxField = 200

// CreateAddress records an address of the project: pending until a provider's review of a
// bundle that uses it verifies (or rejects) it. Immutable: a correction is a new address.
func (s *Service) CreateAddress(ctx context.Context, project string, in AddressInput) (Address, error) {
	var errs []apperror.FieldError
	required := func(path string, v *string) {
		if v == nil || strings.TrimSpace(*v) == "" {
			errs = append(errs, apperror.FieldError{Path: path, Message: "is required"})
		}
	}
	required("countryCode", in.CountryCode)
	required("locality", in.Locality)
	required("postalCode", in.PostalCode)
	required("streetAddress", in.StreetAddress)
	if in.CountryCode != nil && *in.CountryCode != "" && !countryCode.MatchString(*in.CountryCode) {
		errs = append(errs, apperror.FieldError{Path: "countryCode", Message: "must be a two-letter ISO country code such as DE"})
	}
	for _, f := range []struct {
		path string
		v    *string
	}{{"locality", in.Locality}, {"postalCode", in.PostalCode}, {"streetAddress", in.StreetAddress}, {"extendedAddress", in.ExtendedAddress},
		{"administrativeArea", in.AdministrativeArea}, {"businessName", in.BusinessName}, {"firstName", in.FirstName}, {"lastName", in.LastName}} {
		if f.v != nil && len([]rune(*f.v)) > maxField {
			errs = append(errs, apperror.FieldError{Path: f.path, Message: fmt.Sprintf("must be at most %d characters", maxField)})
		}
	}
	if blank(in.BusinessName) && (blank(in.FirstName) || blank(in.LastName)) {
		errs = append(errs, apperror.FieldError{Path: "businessName", Message: "is required unless firstName and lastName name a person"})
	}
	if len(errs) > 0 {
		return Address{}, apperror.InvalidFields(errs...)
	}
	id, err := randid.Name("addr_", 20)
	if err != nil {
		return Address{}, err
	}
	row, err := db.Planned(s.Pool).InsertRegulatoryAddress(ctx, db.InsertRegulatoryAddressParams{ID: id, Project: project,
		CountryCode: strings.ToUpper(*in.CountryCode), Locality: strings.TrimSpace(*in.Locality), PostalCode: strings.TrimSpace(*in.PostalCode),
		StreetAddress: strings.TrimSpace(*in.StreetAddress), ExtendedAddress: trimmed(in.ExtendedAddress),
		AdministrativeArea: trimmed(in.AdministrativeArea), BusinessName: trimmed(in.BusinessName), FirstName: trimmed(in.FirstName),
		LastName: trimmed(in.LastName), Now: s.now()})
	if err != nil {
		return Address{}, fmt.Errorf("insert address: %w", err)
	}
	return addressView(row), nil
}

func blank(v *string) bool { return v == nil || strings.TrimSpace(*v) == "" }

// trimmed is v without surrounding blanks; nil when nothing is left.
func trimmed(v *string) *string {
	if blank(v) {
		return nil
	}
	t := strings.TrimSpace(*v)
	return &t
}

func addressView(r db.RegulatoryAddress) Address {
	return Address{ID: r.ID, CountryCode: r.CountryCode, Locality: r.Locality, PostalCode: r.PostalCode, StreetAddress: r.StreetAddress,
		ExtendedAddress: r.ExtendedAddress, AdministrativeArea: r.AdministrativeArea, BusinessName: r.BusinessName,
		FirstName: r.FirstName, LastName: r.LastName, Status: r.Status, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

func notFound(what string) error {
	return apperror.New(apperror.NotFound, "not_found", what+" not found.")
}

// GetAddress reads one of the project's addresses.
func (s *Service) GetAddress(ctx context.Context, project, id string) (Address, error) {
	row, err := db.Planned(s.Pool).GetRegulatoryAddress(ctx, db.GetRegulatoryAddressParams{ID: id, Project: project})
	if errors.Is(err, pgx.ErrNoRows) {
		return Address{}, notFound("Address")
	}
	if err != nil {
		return Address{}, err
	}
	return addressView(row), nil
}

// Page is where a list continues: before this creation time and id (nil: from the newest);
// Limit rows at most.
type Page struct {
	BeforeTime *time.Time
	BeforeID   *string
	Limit      int32
}

// ListAddresses lists the project's addresses, newest first.
func (s *Service) ListAddresses(ctx context.Context, project string, p Page) ([]Address, error) {
	rows, err := db.Planned(s.Pool).ListRegulatoryAddresses(ctx, db.ListRegulatoryAddressesParams{Project: project, BeforeTime: p.BeforeTime,
		BeforeID: p.BeforeID, MaxRows: p.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]Address, len(rows))
	for i, r := range rows {
		out[i] = addressView(r)
	}
	return out, nil
}

// DeleteAddress deletes an address no bundle uses (409 when one does).
func (s *Service) DeleteAddress(ctx context.Context, project, id string) error {
	if _, err := s.GetAddress(ctx, project, id); err != nil {
		return err
	}
	n, err := db.Planned(s.Pool).DeleteRegulatoryAddress(ctx, db.DeleteRegulatoryAddressParams{ID: id, Project: project})
	if err != nil {
		return err
	}
	if n == 0 {
		return apperror.New(apperror.Conflict, "conflict", "The address is in use: a regulatory bundle of a phone number rests on it.")
	}
	return nil
}

// UploadURL makes a one-time upload URL under base (the API's public base URL): good for
// UploadTTL, for one file of at most MaxFileSize bytes of the MimeTypes. The file is POSTed
// (or PUT) raw with its Content-Type; the answer names its storageId.
func (s *Service) UploadURL(ctx context.Context, project, base string) (string, error) {
	id, err := randid.Name("st_", 20)
	if err != nil {
		return "", err
	}
	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return "", err
	}
	ttl := s.UploadTTL
	if ttl <= 0 {
		ttl = DefaultUploadTTL
	}
	now := s.now()
	hash := sha256.Sum256(token)
	if _, err := db.Planned(s.Pool).InsertRegulatoryUpload(ctx, db.InsertRegulatoryUploadParams{ID: id, Project: project, TokenHash: hash[:],
		ExpiresAt: now.Add(ttl), Now: now}); err != nil {
		return "", fmt.Errorf("insert upload: %w", err)
	}
	return strings.TrimRight(base, "/") + UploadPath + base64.RawURLEncoding.EncodeToString(token), nil
}

// Receive stores the file sent to an upload URL's token, of contentType, and returns its
// storageId. A token used before, expired or unknown, a type not taken and a file too large
// or empty are 400 and store nothing.
func (s *Service) Receive(ctx context.Context, token, contentType string, body io.Reader) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) != 32 {
		return "", uploadRefused("This upload URL is not valid.")
	}
	mime, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(contentType)), ";")
	if !slices.Contains(MimeTypes, mime) {
		return "", uploadRefused(fmt.Sprintf("Upload a PDF, JPEG or PNG file with its Content-Type (%s).", strings.Join(MimeTypes, ", ")))
	}
	// Read it all first (bounded): a refused file takes nothing, not even the token.
	data, err := io.ReadAll(io.LimitReader(body, MaxFileSize+1))
	if err != nil {
		return "", uploadRefused("The file could not be read: " + err.Error())
	}
	switch {
	case len(data) == 0:
		return "", uploadRefused("The file is empty.")
	case len(data) > MaxFileSize:
		return "", apperror.New(apperror.TooLarge, "request_too_large", fmt.Sprintf("A document's file is at most %d MiB.", MaxFileSize>>20))
	}
	hash := sha256.Sum256(raw)
	var id string
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		up, err := q.TakeRegulatoryUpload(ctx, db.TakeRegulatoryUploadParams{TokenHash: hash[:], MimeType: &mime, Now: s.now()})
		if errors.Is(err, pgx.ErrNoRows) {
			known, err := q.RegulatoryUploadByToken(ctx, hash[:])
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				return uploadRefused("This upload URL is not valid.")
			case err != nil:
				return err
			case known.UploadedAt != nil:
				return uploadRefused("This upload URL was used already: ask for another (POST /v1/documents/upload-url).")
			}
			return uploadRefused("This upload URL has expired: ask for another (POST /v1/documents/upload-url).")
		}
		if err != nil {
			return err
		}
		id = up.ID
		if err := s.files().Put(ctx, tx, up.ID, mime, data); err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		size := int64(len(data))
		return q.FinishRegulatoryUpload(ctx, db.FinishRegulatoryUploadParams{ID: up.ID, SizeBytes: &size, Sha256: sum[:]})
	})
	return id, err
}

func uploadRefused(msg string) error {
	return apperror.New(apperror.Invalid, "invalid_request", msg)
}

// Document is a regulatory document as the API shows it (the client's RegulatoryDocument).
type Document struct {
	ID              string    `json:"id"`
	DocumentType    string    `json:"documentType"`
	Name            string    `json:"name"`
	Status          string    `json:"status"`
	FileSize        int64     `json:"fileSize"`
	MimeType        string    `json:"mimeType"`
	RejectionReason *string   `json:"rejectionReason"`
	CreatedAt       time.Time `json:"createdAt"`
	UpdatedAt       time.Time `json:"updatedAt"`
}

// DocumentInput is POST /v1/documents.
type DocumentInput struct {
	DocumentType *string `json:"documentType"`
	FileSize     *int64  `json:"fileSize"`
	MimeType     *string `json:"mimeType"`
	Name         *string `json:"name"`
	StorageID    *string `json:"storageId"`
}

// CreateDocument records a document of the project whose file was uploaded (storageId): it is
// `uploaded`, waiting for a provider's review of a bundle that uses it. The file must be the
// project's, uploaded, of the type and size the body says, and not another document's.
func (s *Service) CreateDocument(ctx context.Context, project string, in DocumentInput) (Document, error) {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	switch {
	case in.DocumentType == nil:
		bad("documentType", "is required")
	case !slices.Contains(DocumentTypes, *in.DocumentType):
		bad("documentType", "must be one of "+strings.Join(DocumentTypes, ", "))
	}
	if blank(in.Name) {
		bad("name", "is required")
	} else if len([]rune(*in.Name)) > maxField {
		bad("name", fmt.Sprintf("must be at most %d characters", maxField))
	}
	if in.MimeType == nil {
		bad("mimeType", "is required")
	}
	if in.FileSize == nil {
		bad("fileSize", "is required")
	}
	var up db.RegulatoryUpload
	if blank(in.StorageID) {
		bad("storageId", "is required: upload the file to an upload URL (POST /v1/documents/upload-url) first")
	} else {
		var err error
		up, err = db.Planned(s.Pool).GetRegulatoryUpload(ctx, db.GetRegulatoryUploadParams{ID: *in.StorageID, Project: project})
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			bad("storageId", "is no upload of this project")
		case err != nil:
			return Document{}, err
		case up.UploadedAt == nil || up.SizeBytes == nil:
			bad("storageId", "has no file yet: upload it to its upload URL first")
		default:
			if in.MimeType != nil && up.MimeType != nil && !strings.EqualFold(*in.MimeType, *up.MimeType) {
				bad("mimeType", fmt.Sprintf("the uploaded file is %s", *up.MimeType))
			}
			if in.FileSize != nil && *in.FileSize != *up.SizeBytes {
				bad("fileSize", fmt.Sprintf("the uploaded file has %d bytes", *up.SizeBytes))
			}
		}
	}
	if len(errs) > 0 {
		return Document{}, apperror.InvalidFields(errs...)
	}
	id, err := randid.Name("doc_", 20)
	if err != nil {
		return Document{}, err
	}
	row, err := db.Planned(s.Pool).InsertRegulatoryDocument(ctx, db.InsertRegulatoryDocumentParams{ID: id, Project: project,
		DocumentType: *in.DocumentType, Name: strings.TrimSpace(*in.Name), Upload: up.ID, MimeType: *up.MimeType, FileSize: *up.SizeBytes,
		Now: s.now()})
	if errors.Is(err, pgx.ErrNoRows) {
		return Document{}, apperror.InvalidFields(apperror.FieldError{Path: "storageId", Message: "is another document's file already"})
	}
	if err != nil {
		return Document{}, fmt.Errorf("insert document: %w", err)
	}
	return documentView(row), nil
}

func documentView(r db.RegulatoryDocument) Document {
	return Document{ID: r.ID, DocumentType: r.DocumentType, Name: r.Name, Status: r.Status, FileSize: r.FileSize, MimeType: r.MimeType,
		RejectionReason: r.RejectionReason, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

// GetDocument reads one of the project's documents.
func (s *Service) GetDocument(ctx context.Context, project, id string) (Document, error) {
	row, err := db.Planned(s.Pool).GetRegulatoryDocument(ctx, db.GetRegulatoryDocumentParams{ID: id, Project: project})
	if errors.Is(err, pgx.ErrNoRows) {
		return Document{}, notFound("Document")
	}
	if err != nil {
		return Document{}, err
	}
	return documentView(row), nil
}

// ListDocuments lists the project's documents, newest first.
func (s *Service) ListDocuments(ctx context.Context, project string, p Page) ([]Document, error) {
	rows, err := db.Planned(s.Pool).ListRegulatoryDocuments(ctx, db.ListRegulatoryDocumentsParams{Project: project, BeforeTime: p.BeforeTime,
		BeforeID: p.BeforeID, MaxRows: p.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]Document, len(rows))
	for i, r := range rows {
		out[i] = documentView(r)
	}
	return out, nil
}

// DeleteDocument deletes a document and its file; a verified one stays (409).
func (s *Service) DeleteDocument(ctx context.Context, project, id string) error {
	if _, err := s.GetDocument(ctx, project, id); err != nil {
		return err
	}
	var upload string
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		var err error
		upload, err = q.DeleteRegulatoryDocument(ctx, db.DeleteRegulatoryDocumentParams{ID: id, Project: project})
		if errors.Is(err, pgx.ErrNoRows) {
			return apperror.New(apperror.Conflict, "conflict", "The document is verified: a phone number's regulatory bundle rests on it.")
		}
		if err != nil {
			return err
		}
		return q.DeleteRegulatoryUpload(ctx, upload)
	})
	if err != nil {
		return err
	}
	return s.files().Delete(ctx, upload)
}

// File reads a document's file (a bundle submits it).
func (s *Service) File(ctx context.Context, project, documentID string) ([]byte, error) {
	d, err := db.Planned(s.Pool).GetRegulatoryDocument(ctx, db.GetRegulatoryDocumentParams{ID: documentID, Project: project})
	if err != nil {
		return nil, err
	}
	return s.files().Get(ctx, d.Upload)
}

// SweepUploads deletes upload URLs never used, and files no document took, a day after they
// expired.
func (s *Service) SweepUploads(ctx context.Context) (int64, error) {
	gone, err := db.Planned(s.Pool).DeleteExpiredRegulatoryUploads(ctx, s.now().Add(-24*time.Hour))
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, g := range gone {
		if g.HadFile {
			errs = append(errs, s.files().Delete(ctx, g.ID))
		}
	}
	return int64(len(gone)), errors.Join(errs...)
}

// Sweeper deletes expired uploads now and then (a worker runs it).
type Sweeper struct {
	Service *Service
	// Every is how often (an hour when zero).
	Every time.Duration
	Log   logr.Logger
}

// Start implements manager.Runnable.
func (w *Sweeper) Start(ctx context.Context) error {
	periodic.Run(ctx, w.Every, time.Hour, func(ctx context.Context) {
		if n, err := w.Service.SweepUploads(ctx); err != nil && ctx.Err() == nil {
			w.Log.Error(err, "deleting expired document uploads")
		} else if n > 0 {
			w.Log.V(1).Info("deleted expired document uploads", "count", n)
		}
	})
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: any worker may sweep.
func (w *Sweeper) NeedLeaderElection() bool { return false }
