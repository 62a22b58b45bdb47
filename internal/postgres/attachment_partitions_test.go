package postgres_test

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// A message's files are partitioned with it (migration 43 and the conversion): files stored
// before the conversion are still read from the partition of earlier rows, and a file stored
// after it lies in its message's day, where each read of a message's files locks that day alone
// among 60 days of partitions.
func TestAMessagesFilesConvertAndReadOnlyTheirDay(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewEmptyPool(t)
	if _, err := postgres.MigrateTo(ctx, pool, 42); err != nil {
		t.Fatal(err)
	}
	// files stores a message's two files: one holding its content, one pointing at a shared one.
	files := func(q *db.Queries, message string, at time.Time) {
		t.Helper()
		shared, own := "atc_"+message, []byte("own file")
		if _, err := q.InsertAttachmentContents(ctx, []db.InsertAttachmentContentsParams{{ID: shared, Content: []byte("shared file"), CreatedAt: at}}); err != nil {
			t.Fatal(err)
		}
		if _, err := q.InsertMessageAttachments(ctx, []db.InsertMessageAttachmentsParams{
			{ID: "att_1" + message, MessageID: message, Position: 0, Filename: "a.txt", Size: int64(len(own)), Content: own, CreatedAt: at},
			{ID: "att_2" + message, MessageID: message, Position: 1, Filename: "b.txt", Size: 11, ContentRef: &shared, CreatedAt: at},
		}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(q *db.Queries, message string) {
		t.Helper()
		if listed, err := q.ListMessageAttachments(ctx, message); err != nil || len(listed) != 2 {
			t.Fatalf("files of %s listed: %d, %v", message, len(listed), err)
		}
		sent, err := q.MessageAttachmentsToSend(ctx, message)
		if err != nil || len(sent) != 2 || !bytes.Equal(sent[0].Content, []byte("own file")) || !bytes.Equal(sent[1].Content, []byte("shared file")) {
			t.Fatalf("files of %s to send: %+v, %v", message, sent, err)
		}
		if media, err := q.MessageMedia(ctx, message); err != nil || media.Filename != "a.txt" {
			t.Fatalf("media of %s: %+v, %v", message, media, err)
		}
	}

	then := time.Now().Add(-3 * partition.Day)
	old, err := randid.Timed("msg_", then)
	if err != nil {
		t.Fatal(err)
	}
	files(db.Planned(pool), old, then)
	applied, err := postgres.Migrate(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(applied.Partitioned, "message_attachments") || !slices.Contains(applied.Partitioned, "attachment_contents") {
		t.Fatalf("a message's files not converted: %+v", applied)
	}
	read(db.Planned(pool), old)

	// A message two days after the cutover, at noon: an id's minute either side is that day.
	now := time.Now().UTC().Truncate(partition.Day).Add(2*partition.Day + 12*time.Hour)
	pgtest.SixtyDays(t, pool, now, "message_attachments", "attachment_contents")
	fresh, err := randid.Timed("msg_", now)
	if err != nil {
		t.Fatal(err)
	}
	files(db.Planned(pool), fresh, now)
	for _, table := range []string{"message_attachments", "attachment_contents"} {
		day := table + "_p" + now.Format("20060102")
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			read(db.Planned(tx), fresh)
			if locked := pgtest.LockedPartitions(t, tx, table); !slices.Equal(locked, []string{day}) {
				t.Errorf("reading a message's files locked %v of %s, want only %s", locked, table, day)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
