package message

import (
	"time"

	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// messagesIn returns the queries run on conn with the messages table addressed through its
// partitions that may hold rows created in [from, to), by name (db.OnPartitions): prepared
// statements on plain tables instead of a statement on the parent planned at every run. When the
// catalog cannot name them, the statements go to the parent (db.Planned).
func (s *Service) messagesIn(conn db.DBTX, from, to time.Time) *db.Queries {
	return db.InSpan(s.partitions, conn, "messages", from, to, s.retention.Since("messages", s.now()))
}

// messagesOf is messagesIn for the messages whose ids are ids.
func (s *Service) messagesOf(conn db.DBTX, ids ...string) *db.Queries {
	from, to := partition.Bounds(ids)
	return s.messagesIn(conn, from, to)
}

// Partitions is the catalog of partitions the service's statements name (for other services
// reading messages).
func (s *Service) Partitions() *partition.Catalog { return s.partitions }
