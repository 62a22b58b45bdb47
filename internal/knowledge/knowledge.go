// Package knowledge keeps agents' knowledge bases: documents given as text, a URL or a file,
// made into chunks with vectors (processed by a worker job), and retrieved for an execution by
// meaning and by words (docs/agents.md, "Knowledge bases").
package knowledge

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/knowledge/extract"
	"github.com/switchboard-io/switchboard/internal/knowledge/vectorindex"
	"github.com/switchboard-io/switchboard/internal/optional"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Limits of knowledge bases.
const (
	MaxBasesPerAgent    = 50
	MaxDocumentsPerBase = 1000
	MaxName             = 200
	MaxDescription      = 2000
	MaxTitle            = 500
	// MaxTextContent bounds a document given as text (characters).
	MaxTextContent = extract.MaxTextChars
)

// NotifyChannel is where a change of an agent's chunks is announced, with its index key.
const NotifyChannel = "switchboard_knowledge"

// Service keeps knowledge bases and documents, and retrieves from them.
type Service struct {
	Pool *pgxpool.Pool
	// Agents reads the agents whose documents are processed (the informer cache).
	Agents client.Reader
	// Queue enqueues a document's processing in the transaction that stores it.
	Queue *river.Client[pgx.Tx]
	// Routes says which model embeds an agent's chunks.
	Routes Routes
	// Index holds the vectors of agents being answered for.
	Index *vectorindex.Index
	// Fetch reads a document's URL (the deliveries' address guard, limits of Fetcher).
	Fetch *Fetcher
	Log   logr.Logger
	now   func() time.Time
}

func (s *Service) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// Base is a knowledge base with its counts.
type Base struct {
	db.KnowledgeBase
	DocumentCount, TotalChunks int32
}

// BaseInput is a knowledge base's create or update body: a field left out changes nothing.
type BaseInput struct {
	Name        optional.Value[string] `json:"name"`
	Description optional.Value[string] `json:"description"`
}

func (in BaseInput) check(create bool) error {
	var errs []apperror.FieldError
	switch {
	case create && !in.Name.Set:
		errs = append(errs, apperror.FieldError{Path: "name", Message: "is required"})
	case in.Name.Set && (in.Name.Null || strings.TrimSpace(in.Name.Value) == ""):
		errs = append(errs, apperror.FieldError{Path: "name", Message: "must not be empty"})
	case in.Name.Set && utf8.RuneCountInString(in.Name.Value) > MaxName:
		errs = append(errs, apperror.FieldError{Path: "name", Message: fmt.Sprintf("must be at most %d characters", MaxName)})
	}
	if in.Description.Set && utf8.RuneCountInString(in.Description.Value) > MaxDescription {
		errs = append(errs, apperror.FieldError{Path: "description", Message: fmt.Sprintf("must be at most %d characters", MaxDescription)})
	}
	if len(errs) > 0 {
		return apperror.InvalidFields(errs...)
	}
	return nil
}

// CreateBase makes a knowledge base of agent a.
func (s *Service) CreateBase(ctx context.Context, a *v1alpha1.Agent, in BaseInput) (Base, error) {
	if err := in.check(true); err != nil {
		return Base{}, err
	}
	id, err := randid.Prefixed("kb_", 20)
	if err != nil {
		return Base{}, err
	}
	var kb db.KnowledgeBase
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		// Two creates of one agent take turns, so both cannot pass the limit.
		if err := q.LockKey(ctx, "knowledge:"+a.Namespace+"/"+a.Name); err != nil {
			return err
		}
		n, err := q.CountAgentKnowledgeBases(ctx, db.CountAgentKnowledgeBasesParams{Project: a.Namespace, Agent: a.Name})
		if err != nil {
			return err
		}
		if n >= MaxBasesPerAgent {
			return apperror.New(apperror.Invalid, "limit_exceeded", fmt.Sprintf("An agent has at most %d knowledge bases.", MaxBasesPerAgent))
		}
		kb, err = q.InsertKnowledgeBase(ctx, db.InsertKnowledgeBaseParams{ID: id, Project: a.Namespace, Agent: a.Name,
			Name: strings.TrimSpace(in.Name.Value), Description: nonEmpty(in.Description), Now: s.clock().UTC()})
		return err
	})
	if err != nil {
		return Base{}, err
	}
	return Base{KnowledgeBase: kb}, nil
}

// GetBase returns a knowledge base of a: 404 when a has none of that id.
func (s *Service) GetBase(ctx context.Context, a *v1alpha1.Agent, id string) (Base, error) {
	row, err := db.Planned(s.Pool).KnowledgeBaseSummary(ctx, db.KnowledgeBaseSummaryParams{ID: id, Project: a.Namespace, Agent: a.Name})
	if errors.Is(err, pgx.ErrNoRows) {
		return Base{}, apperror.NotFoundf("Knowledge base %s not found.", id)
	}
	if err != nil {
		return Base{}, err
	}
	return Base{KnowledgeBase: db.KnowledgeBase{ID: row.ID, Project: row.Project, Agent: row.Agent, Name: row.Name,
		Description: row.Description, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt},
		DocumentCount: row.DocumentCount, TotalChunks: row.TotalChunks}, nil
}

// Bases returns up to n of a's knowledge bases, newest first, after a position.
func (s *Service) Bases(ctx context.Context, a *v1alpha1.Agent, afterTime *time.Time, afterID *string, n int) ([]Base, error) {
	rows, err := db.Planned(s.Pool).KnowledgeBasePage(ctx, db.KnowledgeBasePageParams{Project: a.Namespace, Agent: a.Name,
		AfterTime: afterTime, AfterID: afterID, MaxRows: int32(n)})
	if err != nil {
		return nil, err
	}
	out := make([]Base, len(rows))
	for i, r := range rows {
		out[i] = Base{KnowledgeBase: db.KnowledgeBase{ID: r.ID, Project: r.Project, Agent: r.Agent, Name: r.Name,
			Description: r.Description, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, DocumentCount: r.DocumentCount, TotalChunks: r.TotalChunks}
	}
	return out, nil
}

// UpdateBase renames or redescribes a knowledge base.
func (s *Service) UpdateBase(ctx context.Context, a *v1alpha1.Agent, id string, in BaseInput) (Base, error) {
	if err := in.check(false); err != nil {
		return Base{}, err
	}
	kb, err := s.GetBase(ctx, a, id)
	if err != nil {
		return Base{}, err
	}
	name, desc := kb.Name, kb.Description
	if in.Name.Set {
		name = strings.TrimSpace(in.Name.Value)
	}
	if in.Description.Set {
		desc = nonEmpty(in.Description)
	}
	if _, err := db.Planned(s.Pool).UpdateKnowledgeBase(ctx, db.UpdateKnowledgeBaseParams{ID: id, Project: a.Namespace, Agent: a.Name,
		Name: name, Description: desc, Now: s.clock().UTC()}); err != nil {
		return Base{}, err
	}
	return s.GetBase(ctx, a, id)
}

// DeleteBase deletes a knowledge base with its documents and chunks.
func (s *Service) DeleteBase(ctx context.Context, a *v1alpha1.Agent, id string) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		n, err := q.DeleteKnowledgeBase(ctx, db.DeleteKnowledgeBaseParams{ID: id, Project: a.Namespace, Agent: a.Name})
		if err != nil {
			return err
		}
		if n == 0 {
			return apperror.NotFoundf("Knowledge base %s not found.", id)
		}
		return s.notifyAll(ctx, q, a)
	})
}

// Forget deletes everything agent a knew (the agent is gone).
func (s *Service) Forget(ctx context.Context, project, agent string) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		if _, err := q.DeleteAgentKnowledge(ctx, db.DeleteAgentKnowledgeParams{Project: project, Agent: agent}); err != nil {
			return err
		}
		return q.NotifyKnowledge(ctx, keyPrefix(project, agent))
	})
}

// DocumentInput is a document's create or update body. The client's is {title, content};
// Switchboard's own fields give a URL to fetch or a file (base64) instead of content.
type DocumentInput struct {
	Title   optional.Value[string] `json:"title"`
	Content optional.Value[string] `json:"content"`
	URL     optional.Value[string] `json:"url"`
	File    optional.Value[File]   `json:"file"`
}

// File is an uploaded document: its bytes in base64, its type and name (either says what it
// is; the bytes must agree).
type File struct {
	Data        string `json:"data"`
	ContentType string `json:"contentType"`
	Name        string `json:"name"`
}

// source is a checked document input.
type source struct {
	kind                   string // text, url, file
	original               []byte
	url, name, contentType *string
	length                 int
}

func (in DocumentInput) check(create bool) (*source, error) {
	var errs []apperror.FieldError
	switch {
	case create && !in.Title.Set:
		errs = append(errs, apperror.FieldError{Path: "title", Message: "is required"})
	case in.Title.Set && (in.Title.Null || strings.TrimSpace(in.Title.Value) == ""):
		errs = append(errs, apperror.FieldError{Path: "title", Message: "must not be empty"})
	case in.Title.Set && utf8.RuneCountInString(in.Title.Value) > MaxTitle:
		errs = append(errs, apperror.FieldError{Path: "title", Message: fmt.Sprintf("must be at most %d characters", MaxTitle)})
	}
	given := 0
	for _, set := range []bool{in.Content.Set, in.URL.Set, in.File.Set} {
		if set {
			given++
		}
	}
	if given > 1 {
		errs = append(errs, apperror.FieldError{Path: "content", Message: "give one of content, url and file"})
	}
	if create && given == 0 {
		errs = append(errs, apperror.FieldError{Path: "content", Message: "is required (or url, or file)"})
	}
	var src *source
	switch {
	case given != 1:
	case in.Content.Set:
		n := utf8.RuneCountInString(in.Content.Value)
		switch {
		case in.Content.Null || strings.TrimSpace(in.Content.Value) == "":
			errs = append(errs, apperror.FieldError{Path: "content", Message: "must not be empty"})
		case n > MaxTextContent:
			errs = append(errs, apperror.FieldError{Path: "content", Message: fmt.Sprintf("must be at most %d characters", MaxTextContent)})
		case strings.ContainsRune(in.Content.Value, 0):
			errs = append(errs, apperror.FieldError{Path: "content", Message: "must not contain NUL characters"})
		default:
			src = &source{kind: "text", original: []byte(in.Content.Value), length: n}
		}
	case in.URL.Set:
		u, err := url.Parse(in.URL.Value)
		if in.URL.Null || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(in.URL.Value) > 2048 {
			errs = append(errs, apperror.FieldError{Path: "url", Message: "must be an http(s) URL of at most 2048 characters"})
		} else {
			src = &source{kind: "url", url: &in.URL.Value}
		}
	case in.File.Set:
		f := in.File.Value
		data, err := base64.StdEncoding.DecodeString(f.Data)
		switch {
		case in.File.Null || f.Data == "":
			errs = append(errs, apperror.FieldError{Path: "file.data", Message: "is required"})
		case err != nil:
			errs = append(errs, apperror.FieldError{Path: "file.data", Message: "must be base64"})
		case len(data) > extract.MaxBytes:
			errs = append(errs, apperror.FieldError{Path: "file.data", Message: fmt.Sprintf("must be at most %d bytes", extract.MaxBytes)})
		case len(f.Name) > 255 || len(f.ContentType) > 255:
			errs = append(errs, apperror.FieldError{Path: "file", Message: "name and contentType must be at most 255 characters"})
		default:
			if _, err := extract.KindOf(f.ContentType, f.Name, data); err != nil {
				errs = append(errs, apperror.FieldError{Path: "file", Message: err.Error()})
			} else {
				src = &source{kind: "file", original: data, name: nonEmptyString(f.Name), contentType: nonEmptyString(f.ContentType)}
			}
		}
	}
	if len(errs) > 0 {
		return nil, apperror.InvalidFields(errs...)
	}
	return src, nil
}

// CreateDocument adds a document to a knowledge base of a and enqueues its processing.
func (s *Service) CreateDocument(ctx context.Context, a *v1alpha1.Agent, kbID string, in DocumentInput) (db.KnowledgeDocument, error) {
	src, err := in.check(true)
	if err != nil {
		return db.KnowledgeDocument{}, err
	}
	if _, err := s.GetBase(ctx, a, kbID); err != nil {
		return db.KnowledgeDocument{}, err
	}
	id, err := randid.Prefixed("kdoc_", 20)
	if err != nil {
		return db.KnowledgeDocument{}, err
	}
	var doc db.KnowledgeDocument
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		if err := q.LockKey(ctx, "knowledge-base:"+kbID); err != nil {
			return err
		}
		n, err := q.CountKnowledgeDocuments(ctx, kbID)
		if err != nil {
			return err
		}
		if n >= MaxDocumentsPerBase {
			return apperror.New(apperror.Invalid, "limit_exceeded", fmt.Sprintf("A knowledge base has at most %d documents.", MaxDocumentsPerBase))
		}
		doc, err = q.InsertKnowledgeDocument(ctx, db.InsertKnowledgeDocumentParams{ID: id, Project: a.Namespace, Agent: a.Name,
			KnowledgeBaseID: kbID, Title: strings.TrimSpace(in.Title.Value), Source: src.kind, SourceUrl: src.url, Filename: src.name,
			ContentType: src.contentType, Original: src.original, ContentLength: int32(src.length), Now: s.clock().UTC()})
		if err != nil {
			return err
		}
		_, err = s.Queue.InsertTx(ctx, tx, ProcessArgs{DocumentID: doc.ID, Version: doc.Version}, nil)
		return err
	})
	return doc, err
}

// GetDocument returns a document of a knowledge base of a.
func (s *Service) GetDocument(ctx context.Context, a *v1alpha1.Agent, kbID, id string) (db.KnowledgeDocument, error) {
	if _, err := s.GetBase(ctx, a, kbID); err != nil {
		return db.KnowledgeDocument{}, err
	}
	doc, err := db.Planned(s.Pool).GetKnowledgeDocument(ctx, db.GetKnowledgeDocumentParams{ID: id, KnowledgeBaseID: kbID, Project: a.Namespace})
	if errors.Is(err, pgx.ErrNoRows) {
		return doc, apperror.NotFoundf("Document %s not found.", id)
	}
	return doc, err
}

// Documents returns up to n documents of a knowledge base, newest first, after a position.
func (s *Service) Documents(ctx context.Context, a *v1alpha1.Agent, kbID string, afterTime *time.Time, afterID *string, n int) ([]db.KnowledgeDocument, error) {
	if _, err := s.GetBase(ctx, a, kbID); err != nil {
		return nil, err
	}
	return db.Planned(s.Pool).KnowledgeDocumentPage(ctx, db.KnowledgeDocumentPageParams{KnowledgeBaseID: kbID, Project: a.Namespace,
		AfterTime: afterTime, AfterID: afterID, MaxRows: int32(n)})
}

// UpdateDocument renames a document, or gives it new content (processed again).
func (s *Service) UpdateDocument(ctx context.Context, a *v1alpha1.Agent, kbID, id string, in DocumentInput) (db.KnowledgeDocument, error) {
	src, err := in.check(false)
	if err != nil {
		return db.KnowledgeDocument{}, err
	}
	doc, err := s.GetDocument(ctx, a, kbID, id)
	if err != nil {
		return doc, err
	}
	title := doc.Title
	if in.Title.Set {
		title = strings.TrimSpace(in.Title.Value)
	}
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		if src == nil {
			doc, err = q.RenameKnowledgeDocument(ctx, db.RenameKnowledgeDocumentParams{ID: id, KnowledgeBaseID: kbID, Project: a.Namespace,
				Title: title, Now: s.clock().UTC()})
			return err
		}
		doc, err = q.ReplaceKnowledgeDocumentContent(ctx, db.ReplaceKnowledgeDocumentContentParams{ID: id, KnowledgeBaseID: kbID,
			Project: a.Namespace, Title: title, Source: src.kind, SourceUrl: src.url, Filename: src.name, ContentType: src.contentType,
			Original: src.original, ContentLength: int32(src.length), Now: s.clock().UTC()})
		if err != nil {
			return err
		}
		_, err = s.Queue.InsertTx(ctx, tx, ProcessArgs{DocumentID: doc.ID, Version: doc.Version}, nil)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return doc, apperror.NotFoundf("Document %s not found.", id)
	}
	return doc, err
}

// DeleteDocument deletes a document and its chunks.
func (s *Service) DeleteDocument(ctx context.Context, a *v1alpha1.Agent, kbID, id string) error {
	if _, err := s.GetBase(ctx, a, kbID); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		n, err := q.DeleteKnowledgeDocument(ctx, db.DeleteKnowledgeDocumentParams{ID: id, KnowledgeBaseID: kbID, Project: a.Namespace})
		if err != nil {
			return err
		}
		if n == 0 {
			return apperror.NotFoundf("Document %s not found.", id)
		}
		return s.notifyAll(ctx, q, a)
	})
}

// notifyAll tells every replica that a's chunks changed (whatever model made them).
func (s *Service) notifyAll(ctx context.Context, q *db.Queries, a *v1alpha1.Agent) error {
	return q.NotifyKnowledge(ctx, keyPrefix(a.Namespace, a.Name))
}

// IndexKey names the in-process index of an agent's vectors of one embedding model.
func IndexKey(project, agent, model string) string { return keyPrefix(project, agent) + model }

func keyPrefix(project, agent string) string { return project + "/" + agent + "/" }

func nonEmpty(v optional.Value[string]) *string {
	if v.Null || strings.TrimSpace(v.Value) == "" {
		return nil
	}
	s := strings.TrimSpace(v.Value)
	return &s
}

func nonEmptyString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
