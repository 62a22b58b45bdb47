package phonenumber

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// adoptionSetting names the installation setting that keeps when numbers were first checked.
const adoptionSetting = "phone_number_adoption_cutoff"

// AdoptionCutoff is when this installation started checking who owns a number: the first start
// of a manager that checks, kept in Postgres so every later start, and every replica, reads the
// same. Senders created before it held their numbers unchecked, so the Sender controller adopts
// their numbers (docs/senders.md#existing-senders) rather than cut them off; any Sender created
// after it must prove its number.
func AdoptionCutoff(ctx context.Context, pool *pgxpool.Pool) (time.Time, error) {
	q := db.Planned(pool)
	now := time.Now().UTC().Truncate(time.Second)
	if err := q.InsertSettingIfAbsent(ctx, db.InsertSettingIfAbsentParams{Name: adoptionSetting, Value: []byte(now.Format(time.RFC3339))}); err != nil {
		return time.Time{}, fmt.Errorf("store the number adoption cutoff: %w", err)
	}
	v, err := q.GetSetting(ctx, adoptionSetting)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the number adoption cutoff: %w", err)
	}
	cutoff, err := time.Parse(time.RFC3339, string(v))
	if err != nil {
		return time.Time{}, fmt.Errorf("read the number adoption cutoff %q: %w", v, err)
	}
	return cutoff, nil
}
