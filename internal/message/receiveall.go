package message

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// beginner begins a transaction: a pool, or a transaction (which begins a savepoint).
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// ReceiveAll stores inbound messages that arrived together, as one mail to several senders
// does, in one transaction: each as Receive does, all of them or none. The content of their
// files is stored once, however many of the messages carry it. They are stored in the order
// of project and sender, so that two such transactions over the same senders take their rows
// in the same order; the messages are returned in the order of ins.
func (s *Service) ReceiveAll(ctx context.Context, ins []Inbound) ([]db.Message, error) {
	order := make([]int, len(ins))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(ins[a].Project, ins[b].Project), cmp.Compare(ins[a].Sender, ins[b].Sender))
	})
	out := make([]db.Message, len(ins))
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Any failure ends the transaction: files never names a content rolled back.
		files := &sharedFiles{ids: map[[sha256.Size]byte]string{}}
		for _, i := range order {
			m, err := s.receive(ctx, tx, ins[i], files)
			if err != nil {
				return err
			}
			out[i] = m
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sharedFiles stores the files of messages received together, each content once: the first
// message to carry it stores it in attachment_contents, and every message's attachment row
// points at it. A nil *sharedFiles stores each message's files in its own rows, as a send does.
type sharedFiles struct {
	ids map[[sha256.Size]byte]string // the attachment_contents id of each content stored
}

// store writes the attachments of message messageID, in their order.
func (f *sharedFiles) store(ctx context.Context, tx pgx.Tx, messageID string, atts []attachment, now time.Time) error {
	if f == nil {
		return storeAttachments(ctx, tx, messageID, atts, now)
	}
	if len(atts) == 0 {
		return nil
	}
	var contents []db.InsertAttachmentContentsParams
	rows := make([]db.InsertMessageAttachmentsParams, len(atts))
	for i, a := range atts {
		sum := sha256.Sum256(a.content)
		ref, ok := f.ids[sum]
		if !ok {
			var err error
			if ref, err = newID("atc_"); err != nil {
				return err
			}
			f.ids[sum] = ref
			contents = append(contents, db.InsertAttachmentContentsParams{ID: ref, Content: a.content, CreatedAt: now})
		}
		id, err := newID("att_")
		if err != nil {
			return err
		}
		ct := a.contentType
		rows[i] = db.InsertMessageAttachmentsParams{ID: id, MessageID: messageID, Position: int32(i), Filename: a.filename,
			ContentType: &ct, ContentID: a.contentID, Size: int64(len(a.content)), ContentRef: &ref, CreatedAt: now}
	}
	q := db.Planned(tx)
	if len(contents) > 0 {
		if _, err := q.InsertAttachmentContents(ctx, contents); err != nil {
			return fmt.Errorf("insert attachment contents of message %s: %w", messageID, err)
		}
	}
	if _, err := q.InsertMessageAttachments(ctx, rows); err != nil {
		return fmt.Errorf("insert attachments of message %s: %w", messageID, err)
	}
	return nil
}
