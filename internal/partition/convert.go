package partition

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Converter turns plain tables into partitioned ones while they take writes. Every step is
// idempotent and reads where the table stands from the catalog, so a run killed at any point is
// resumed by the next one (docs/data-lifecycle.md, "Converting a table that holds data").
type Converter struct {
	Pool *pgxpool.Pool
	Log  logr.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Margin is the least time between the start of a conversion and its cutover (1 hour when
	// zero): the steps before the swap must end before the cutover passes, or they begin again
	// with the next midnight.
	Margin time.Duration
	// Ahead is how far past the cutover partitions are made at the swap (2 days when zero).
	Ahead time.Duration
	// LockTimeout bounds each wait for the brief exclusive locks of the key change and the
	// swap (2 s when zero); a step that times out is tried again, up to 30 times.
	LockTimeout time.Duration
	// beforeSwap, when set (tests), runs before the swap's transaction.
	beforeSwap func(Table)
}

func (c *Converter) now() time.Time {
	if c.Now != nil {
		return c.Now().UTC()
	}
	return time.Now().UTC()
}

// ConvertAll converts every table of Tables not yet partitioned.
func (c *Converter) ConvertAll(ctx context.Context) error {
	for _, t := range Tables {
		if err := c.Convert(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// Convert makes t a table partitioned by day on t.Column, keeping its rows where they are: the
// table itself becomes the partition of everything before the cutover (the first midnight at
// least Margin away), checked by a constraint validated while writes go on, with its primary key
// widened to hold the partition column by an index built concurrently. The swap itself (rename,
// new parent, attach, the first days' partitions) is one short transaction.
func (c *Converter) Convert(ctx context.Context, t Table) error {
	done, err := IsPartitioned(ctx, c.Pool, t)
	if err != nil || done {
		return err
	}
	log := c.Log.WithValues("table", t.Name)
	log.Info("converting to daily partitions")
	start := c.now()

	cutover, err := c.cutover(ctx, t)
	if err != nil {
		return err
	}
	for {
		err := c.checkCutover(ctx, t, cutover)
		if err == nil {
			break
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" {
			return err
		}
		// Rows at or after the cutover are there already (a run resumed too late): cut at the
		// next midnight instead.
		if cutover, err = c.moveCutover(ctx, t); err != nil {
			return err
		}
		log.Info("cutover passed before the conversion ended; moved", "cutover", cutover)
	}
	if err := c.widenKey(ctx, t); err != nil {
		return err
	}
	if c.beforeSwap != nil {
		c.beforeSwap(t)
	}
	if err := c.retry(ctx, func() error { return c.swap(ctx, t, cutover) }); err != nil {
		return err
	}
	log.Info("converted to daily partitions", "cutover", cutover, "took", c.now().Sub(start).Round(time.Millisecond))
	return nil
}

// cutover is the conversion's recorded cutover, recorded now when this is its first run.
func (c *Converter) cutover(ctx context.Context, t Table) (time.Time, error) {
	next := c.nextMidnight()
	var cutover time.Time
	err := c.Pool.QueryRow(ctx, `
		INSERT INTO switchboard_partitioned_tables (table_name, cutover) VALUES ($1, $2)
		ON CONFLICT (table_name) DO UPDATE SET table_name = excluded.table_name
		RETURNING cutover`, t.Name, next).Scan(&cutover)
	if err != nil {
		return cutover, fmt.Errorf("record the cutover of %s: %w", t.Name, err)
	}
	return cutover.UTC(), nil
}

func (c *Converter) moveCutover(ctx context.Context, t Table) (time.Time, error) {
	next := c.nextMidnight()
	if _, err := c.Pool.Exec(ctx, `UPDATE switchboard_partitioned_tables SET cutover = $2 WHERE table_name = $1`, t.Name, next); err != nil {
		return next, fmt.Errorf("move the cutover of %s: %w", t.Name, err)
	}
	return next, nil
}

func (c *Converter) nextMidnight() time.Time {
	margin := c.Margin
	if margin == 0 {
		margin = time.Hour
	}
	return c.now().Add(margin).Truncate(Day).Add(Day)
}

// checkName is the constraint that bounds the table's rows below the cutover.
func checkName(t Table) string { return t.Name + "_before_cutover" }

// checkCutover makes sure the table holds a validated CHECK (column < cutover): added NOT VALID
// (a moment's lock) and validated with only a SHARE UPDATE EXCLUSIVE lock, which lets writes
// on. ATTACH PARTITION then trusts it instead of scanning the table under its lock.
func (c *Converter) checkCutover(ctx context.Context, t Table, cutover time.Time) error {
	var def string
	var valid bool
	err := c.Pool.QueryRow(ctx, `
		SELECT pg_get_constraintdef(oid), convalidated FROM pg_constraint
		WHERE conrelid = to_regclass($1) AND conname = $2`, t.Name, checkName(t)).Scan(&def, &valid)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return fmt.Errorf("read %s: %w", checkName(t), err)
	case strings.Contains(def, cutover.Format("2006-01-02")):
		if valid {
			return nil
		}
	default: // made for an earlier cutover
		if err := c.retry(ctx, func() error {
			return c.execWithLockTimeout(ctx, fmt.Sprintf(`ALTER TABLE %s DROP CONSTRAINT %s`, ident(t.Name), ident(checkName(t))))
		}); err != nil {
			return fmt.Errorf("drop %s: %w", checkName(t), err)
		}
		err = pgx.ErrNoRows
	}
	if errors.Is(err, pgx.ErrNoRows) {
		add := fmt.Sprintf(`ALTER TABLE %s ADD CONSTRAINT %s CHECK (%s < %s) NOT VALID`,
			ident(t.Name), ident(checkName(t)), ident(t.Column), literal(cutover))
		if err := c.retry(ctx, func() error { return c.execWithLockTimeout(ctx, add) }); err != nil {
			return fmt.Errorf("add %s: %w", checkName(t), err)
		}
	}
	_, err = c.Pool.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s VALIDATE CONSTRAINT %s`, ident(t.Name), ident(checkName(t))))
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23514" {
			_ = c.retry(ctx, func() error {
				return c.execWithLockTimeout(ctx, fmt.Sprintf(`ALTER TABLE %s DROP CONSTRAINT %s`, ident(t.Name), ident(checkName(t))))
			})
		}
		return err
	}
	return nil
}

// widenKey makes the primary key hold the partition column (a partitioned table's unique keys
// must): the new key's index is built CONCURRENTLY (an index a killed build left invalid is
// dropped and built again), then the key is moved onto it in a moment.
func (c *Converter) widenKey(ctx context.Context, t Table) error {
	var pkName string
	var cols []string
	err := c.Pool.QueryRow(ctx, `
		SELECT con.conname::text, array_agg(a.attname::text ORDER BY k.ord)
		FROM pg_constraint con
		CROSS JOIN LATERAL unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord)
		JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum
		WHERE con.conrelid = to_regclass($1) AND con.contype = 'p'
		GROUP BY con.conname`, t.Name).Scan(&pkName, &cols)
	if err != nil {
		return fmt.Errorf("read the primary key of %s: %w", t.Name, err)
	}
	for _, col := range cols {
		if col == t.Column {
			return nil
		}
	}
	index := t.Name + "_pkey_partitioned"
	for {
		// A killed process's session may still be building the index: Postgres notices the lost
		// client only when the statement ends. Its build is waited for (and used, if it succeeds).
		if err := c.waitForBuild(ctx, index); err != nil {
			return err
		}
		var valid *bool
		if err := c.Pool.QueryRow(ctx, `SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1))`, index).Scan(&valid); err != nil {
			return fmt.Errorf("read %s: %w", index, err)
		}
		if valid != nil && *valid {
			break
		}
		if valid != nil {
			// Left invalid by a build that was stopped.
			if _, err := c.Pool.Exec(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+ident(index)); err != nil {
				return fmt.Errorf("drop the invalid %s: %w", index, err)
			}
		}
		quoted := make([]string, 0, len(cols)+1)
		for _, col := range append(cols, t.Column) {
			quoted = append(quoted, ident(col))
		}
		build := fmt.Sprintf(`CREATE UNIQUE INDEX CONCURRENTLY %s ON %s (%s)`, ident(index), ident(t.Name), strings.Join(quoted, ", "))
		_, err := c.Pool.Exec(ctx, build)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42P07" {
			continue // another session's build appeared meanwhile: look again
		}
		if err != nil {
			return fmt.Errorf("build %s: %w", index, err)
		}
		break
	}
	move := fmt.Sprintf(`ALTER TABLE %s DROP CONSTRAINT %s, ADD CONSTRAINT %s PRIMARY KEY USING INDEX %s`,
		ident(t.Name), ident(pkName), ident(pkName), ident(index))
	return c.retry(ctx, func() error { return c.execWithLockTimeout(ctx, move) })
}

// waitForBuild waits while a session builds index.
func (c *Converter) waitForBuild(ctx context.Context, index string) error {
	for {
		var building bool
		if err := c.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_progress_create_index
			WHERE index_relid = to_regclass($1) AND pid <> pg_backend_pid())`, index).Scan(&building); err != nil {
			return fmt.Errorf("look for a build of %s: %w", index, err)
		}
		if !building {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// swap makes t the partitioned parent of what it was: in one transaction the table and its
// indexes take their _legacy names, a partitioned table takes its name with the same columns,
// constraints and indexes (made at once: it has no rows), the old table is attached as the
// partition of everything before the cutover (its indexes match the parent's and are adopted,
// its validated constraint spares the scan), and the days from the cutover on get partitions.
func (c *Converter) swap(ctx context.Context, t Table, cutover time.Time) error {
	legacy := legacyName(t)
	return pgx.BeginFunc(ctx, c.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`SET LOCAL lock_timeout = %d`, c.lockTimeout().Milliseconds())); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, lockKey(t)); err != nil {
			return err
		}
		var kind string
		if err := tx.QueryRow(ctx, `SELECT relkind::text FROM pg_class WHERE oid = to_regclass($1)`, t.Name).Scan(&kind); err != nil {
			return fmt.Errorf("read %s: %w", t.Name, err)
		}
		if kind == "p" {
			return nil
		}
		// The indexes to make on the parent, as the table has them (the key aside).
		rows, err := tx.Query(ctx, `
			SELECT i.relname::text, pg_get_indexdef(i.oid)
			FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
			WHERE x.indrelid = to_regclass($1) AND NOT x.indisprimary
			ORDER BY i.relname`, t.Name)
		if err != nil {
			return err
		}
		type index struct{ name, def string }
		indexes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (index, error) {
			var i index
			return i, r.Scan(&i.name, &i.def)
		})
		if err != nil {
			return err
		}
		var pkName string
		var pkCols string
		if err := tx.QueryRow(ctx, `
			SELECT conname::text, pg_get_constraintdef(oid) FROM pg_constraint
			WHERE conrelid = to_regclass($1) AND contype = 'p'`, t.Name).Scan(&pkName, &pkCols); err != nil {
			return fmt.Errorf("read the primary key of %s: %w", t.Name, err)
		}

		stmts := []string{
			fmt.Sprintf(`ALTER TABLE %s RENAME TO %s`, ident(t.Name), ident(legacy)),
			fmt.Sprintf(`ALTER TABLE %s RENAME CONSTRAINT %s TO %s`, ident(legacy), ident(pkName), ident(truncName(legacy+"_pkey"))),
		}
		for _, i := range indexes {
			stmts = append(stmts, fmt.Sprintf(`ALTER INDEX %s RENAME TO %s`, ident(i.name), ident(truncName(i.name+"_legacy"))))
		}
		stmts = append(stmts,
			fmt.Sprintf(`CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMMENTS INCLUDING GENERATED INCLUDING IDENTITY) PARTITION BY RANGE (%s)`,
				ident(t.Name), ident(legacy), ident(t.Column)),
			fmt.Sprintf(`ALTER TABLE %s DROP CONSTRAINT %s`, ident(t.Name), ident(checkName(t))),
			fmt.Sprintf(`ALTER TABLE %s ADD CONSTRAINT %s %s`, ident(t.Name), ident(pkName), pkCols),
		)
		for _, i := range indexes {
			// pg_get_indexdef names the table schema-qualified: the name now is the parent's.
			stmts = append(stmts, i.def)
		}
		stmts = append(stmts, fmt.Sprintf(`ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (MINVALUE) TO (%s)`,
			ident(t.Name), ident(legacy), literal(cutover)))
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return fmt.Errorf("convert %s: %s: %w", t.Name, s, err)
			}
		}
		ahead := c.Ahead
		if ahead == 0 {
			ahead = 2 * Day
		}
		for day := cutover; day.Before(cutover.Add(ahead)); day = day.Add(Day) {
			name := dayName(t, day)
			for _, s := range []string{
				fmt.Sprintf(`CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)`, ident(name), ident(t.Name)),
				fmt.Sprintf(`ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (%s) TO (%s)`, ident(t.Name), ident(name), literal(day), literal(day.Add(Day))),
			} {
				if _, err := tx.Exec(ctx, s); err != nil {
					return fmt.Errorf("convert %s: %s: %w", t.Name, s, err)
				}
			}
		}
		_, err = tx.Exec(ctx, `UPDATE switchboard_partitioned_tables SET converted_at = now() WHERE table_name = $1`, t.Name)
		return err
	})
}

// truncName keeps a name within Postgres's 63 bytes.
func truncName(name string) string {
	if len(name) > 63 {
		return name[:63]
	}
	return name
}

func (c *Converter) lockTimeout() time.Duration {
	if c.LockTimeout == 0 {
		return 2 * time.Second
	}
	return c.LockTimeout
}

// execWithLockTimeout runs one statement that takes a strong lock, giving up when the lock is
// not had within the lock timeout: waiting longer would queue every write behind it.
func (c *Converter) execWithLockTimeout(ctx context.Context, stmt string) error {
	return pgx.BeginFunc(ctx, c.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`SET LOCAL lock_timeout = %d`, c.lockTimeout().Milliseconds())); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, stmt)
		return err
	})
}

// retry runs step again while it fails for a lock it could not have in time (55P03).
func (c *Converter) retry(ctx context.Context, step func() error) error {
	var err error
	for attempt := range 30 {
		if err = step(); err == nil {
			return nil
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
			return err
		}
		c.Log.V(1).Info("lock not had in time; trying again", "attempt", attempt+1)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 100 * time.Millisecond):
		}
	}
	return err
}
