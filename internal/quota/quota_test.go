package quota_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/quota"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func project(plan v1alpha1.Plan, level v1alpha1.Verification, agreed *v1alpha1.DailyLimits) *v1alpha1.Project {
	return &v1alpha1.Project{Spec: v1alpha1.ProjectSpec{Plan: plan, Verification: level, DailyLimits: agreed}}
}

// TestLimitsAreTheSpecs: every ceiling of the spec's Sending limits, by plan and verification.
func TestLimitsAreTheSpecs(t *testing.T) {
	t.Parallel()
	const u = quota.Unlimited
	n := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		name                      string
		p                         *v1alpha1.Project
		sms, voice, conv, email   int64
		monthlyConv, monthlyEmail int64
	}{
		{"no project", nil, 25, 5, 100, 100, 2000, 3000},
		{"free, nothing verified", project(v1alpha1.PlanFree, v1alpha1.VerificationNone, nil), 25, 5, 100, 100, 2000, 3000},
		{"paid, nothing verified", project(v1alpha1.PlanPaid, v1alpha1.VerificationNone, nil), 25, 5, 100, u, u, u},
		{"free, contact verified", project(v1alpha1.PlanFree, v1alpha1.VerificationContact, nil), 200, 50, 250, 100, 2000, 3000},
		{"paid, contact verified", project(v1alpha1.PlanPaid, v1alpha1.VerificationContact, nil), 200, u, u, u, u, u},
		{"free, identity approved", project(v1alpha1.PlanFree, v1alpha1.VerificationIdentityApproved, nil), 10000, 50, 250, 100, 2000, 3000},
		{"paid, business approved", project(v1alpha1.PlanPaid, v1alpha1.VerificationBusinessApproved, nil), 10000, u, u, u, u, u},
		{"paid, 10DLC brand", project(v1alpha1.PlanPaid, v1alpha1.VerificationTenDLCBrand, nil), 10000, u, u, u, u, u},
		{"an agreed limit", project(v1alpha1.PlanPaid, v1alpha1.VerificationBusinessApproved,
			&v1alpha1.DailyLimits{SMS: n(50000), Conversational: n(0)}), 50000, u, 0, u, u, u},
	} {
		l := quota.Of(c.p)
		got := []int64{l.Daily[quota.SMS], l.Daily[quota.Voice], l.Daily[quota.Conversational], l.Daily[quota.Email],
			l.Monthly[quota.Conversational], l.Monthly[quota.Email], l.Monthly[quota.SMS], l.Monthly[quota.Voice]}
		want := []int64{c.sms, c.voice, c.conv, c.email, c.monthlyConv, c.monthlyEmail, u, u}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: limits %v, want %v", c.name, got, want)
				break
			}
		}
	}
}

func take(ctx context.Context, pool *pgxpool.Pool, now time.Time, l quota.Limits, ts ...quota.Take) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return quota.TakeAll(ctx, tx, now, ts, func(string) (quota.Limits, error) { return l, nil })
	})
}

// takeCommitting takes ts as the last statements of a transaction, with its commit.
func takeCommitting(ctx context.Context, pool *pgxpool.Pool, now time.Time, l quota.Limits, before func(pgx.Tx) error, ts ...quota.Take) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	if before != nil {
		if err := before(tx); err != nil {
			return errors.Join(err, tx.Rollback(ctx))
		}
	}
	if err := quota.TakeAllAndCommit(ctx, tx, now, ts, func(string) (quota.Limits, error) { return l, nil }); err != nil {
		return errors.Join(err, tx.Rollback(ctx))
	}
	if s := conn.Conn().PgConn().TxStatus(); s != 'I' {
		return fmt.Errorf("after the takes and the commit the connection is in state %c, not idle", s)
	}
	return nil
}

func code(err error) string {
	if e := apperror.As(err); e != nil {
		return e.Code
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// TestCeilingBoundary: the 25th SMS of the day is taken, the 26th refused with the limit and
// the reset; the next UTC day starts again; test traffic counts apart.
func TestCeilingBoundary(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	l := quota.Of(nil)
	now := time.Date(2026, 11, 24, 23, 59, 0, 0, time.UTC)
	sms := quota.Take{Project: "acme", Meter: quota.SMS, N: 1}
	for i := 1; i <= 25; i++ {
		if err := take(ctx, pool, now, l, sms); err != nil {
			t.Fatalf("SMS %d: %v", i, err)
		}
	}
	err := take(ctx, pool, now, l, sms)
	e := apperror.As(err)
	if e == nil || e.Code != "daily_limit_exceeded" || e.Kind != apperror.RateLimited || e.Details["limit"] != int64(25) ||
		e.Details["resetAt"] != "2026-11-25T00:00:00Z" {
		t.Fatalf("SMS 26: %v %+v", err, e)
	}
	test := sms
	test.TestMode = true
	if err := take(ctx, pool, now, l, test); err != nil {
		t.Fatalf("a test SMS counts apart: %v", err)
	}
	if err := take(ctx, pool, now.Add(time.Minute), l, sms); err != nil {
		t.Fatalf("the first SMS of the next day: %v", err)
	}
	// Two at once when one is left: refused whole.
	if err := take(ctx, pool, now.Add(time.Minute), l, quota.Take{Project: "acme", Meter: quota.SMS, N: 25}); code(err) != "daily_limit_exceeded" {
		t.Fatalf("25 more = %v", err)
	}
}

// TestConcurrentTakesDoNotOvershoot: 100 sends at once when one unit is left: exactly one.
func TestConcurrentTakesDoNotOvershoot(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	l := quota.Of(nil)
	now := time.Now()
	if err := take(ctx, pool, now, l, quota.Take{Project: "acme", Meter: quota.Voice, N: quota.VoiceUnverified - 1}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken, refused := 0, 0
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := take(ctx, pool, now, l, quota.Take{Project: "acme", Meter: quota.Voice, N: 1})
			mu.Lock()
			defer mu.Unlock()
			switch code(err) {
			case "":
				taken++
			case "daily_limit_exceeded":
				refused++
			default:
				t.Errorf("take: %v", err)
			}
		}()
	}
	wg.Wait()
	if taken != 1 || refused != 99 {
		t.Fatalf("%d taken, %d refused; want 1 and 99", taken, refused)
	}
}

// TestMonthlyAllowance: the 2,000th conversational message of a Free month is taken and the
// 2,001st refused (a2p_limit_exceeded), inbound ones count toward it and not toward the daily
// ceiling, a failed send gives its unit back, and the 1st of the month starts again.
func TestMonthlyAllowance(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	l := quota.Of(project(v1alpha1.PlanFree, v1alpha1.VerificationIdentityApproved, nil))
	l.Daily[quota.Conversational] = quota.Unlimited // the month is under test, not the day
	day := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	out := quota.Take{Project: "acme", Meter: quota.Conversational, N: 1}
	in := quota.Take{Project: "acme", Meter: quota.Conversational, Inbound: true, N: 1}
	if err := take(ctx, pool, day, l, quota.Take{Project: "acme", Meter: quota.Conversational, N: 1000},
		quota.Take{Project: "acme", Meter: quota.Conversational, Inbound: true, N: 999}); err != nil {
		t.Fatal(err)
	}
	if err := take(ctx, pool, day, l, in); err != nil {
		t.Fatalf("the 2,000th: %v", err)
	}
	for _, tk := range []quota.Take{out, in} {
		err := take(ctx, pool, day, l, tk)
		if e := apperror.As(err); e == nil || e.Code != "a2p_limit_exceeded" || e.Details["limit"] != int64(2000) || e.Details["upgrade"] == nil {
			t.Fatalf("the 2,001st (inbound %v): %v", tk.Inbound, err)
		}
	}
	// A failed send gives back its unit: one more fits.
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return quota.GiveBack(ctx, tx, "acme", false, quota.Conversational, 1, day)
	}); err != nil {
		t.Fatal(err)
	}
	if err := take(ctx, pool, day, l, out); err != nil {
		t.Fatalf("after a failed send: %v", err)
	}
	if err := take(ctx, pool, day, l, out); code(err) != "a2p_limit_exceeded" {
		t.Fatalf("past the allowance again: %v", err)
	}
	if err := take(ctx, pool, day.AddDate(0, 0, 1), l, out); err != nil {
		t.Fatalf("December 1st: %v", err)
	}
	// The daily ceiling counts sends only: 250 inbound on a Free day leave all 250 sends.
	l = quota.Of(project(v1alpha1.PlanFree, v1alpha1.VerificationIdentityApproved, nil))
	other := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	if err := take(ctx, pool, other, l, quota.Take{Project: "bravo", Meter: quota.Conversational, Inbound: true, N: 250},
		quota.Take{Project: "bravo", Meter: quota.Conversational, N: 250}); err != nil {
		t.Fatalf("250 in and 250 out: %v", err)
	}
	if err := take(ctx, pool, other, l, quota.Take{Project: "bravo", Meter: quota.Conversational, N: 1}); code(err) != "daily_limit_exceeded" {
		t.Fatalf("the 251st send of the day: %v", err)
	}
}

// TestFreeEmailMonth: a Free project's 3,000th email of the month goes, the 3,001st is refused
// with daily_limit_exceeded naming the month, though the day's 100 are all left.
func TestFreeEmailMonth(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	l := quota.Of(project(v1alpha1.PlanFree, v1alpha1.VerificationBusinessApproved, nil))
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) // 31 days: the 31st has its day's 100 left
	for day := range 30 {
		if err := take(ctx, pool, start.AddDate(0, 0, day), l, quota.Take{Project: "acme", Meter: quota.Email, N: 100}); err != nil {
			t.Fatalf("day %d: %v", day+1, err)
		}
	}
	err := take(ctx, pool, start.AddDate(0, 0, 30), l, quota.Take{Project: "acme", Meter: quota.Email, N: 1})
	if e := apperror.As(err); e == nil || e.Code != "daily_limit_exceeded" || e.Details["period"] != "month" || e.Details["limit"] != int64(3000) {
		t.Fatalf("the 3,001st email = %v", err)
	}
	// The 101st of a day is refused by the day's ceiling.
	if err := take(ctx, pool, time.Date(2027, 1, 1, 9, 0, 0, 0, time.UTC), l, quota.Take{Project: "acme", Meter: quota.Email, N: 101}); code(err) != "daily_limit_exceeded" {
		t.Fatalf("101 emails in a day = %v", err)
	}
}

// BenchmarkTake is one send's take of a ceiling in a transaction of its own, the same counter
// row each time (a project sending alone).
func BenchmarkTake(b *testing.B) {
	pool := pgtest.NewPool(b)
	ctx := context.Background()
	l := quota.Of(project(v1alpha1.PlanPaid, v1alpha1.VerificationBusinessApproved, &v1alpha1.DailyLimits{SMS: ptr(int64(1 << 40))}))
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if err := take(ctx, pool, now, l, quota.Take{Project: "acme", Meter: quota.SMS, N: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestTakesWithTheCommit: takes sent with the commit commit the whole transaction when the
// ceilings allow them, and nothing of it when one refuses; 100 at once for the last unit take
// exactly one.
func TestTakesWithTheCommit(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	l := quota.Of(nil)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	used := func(project string) int64 {
		t.Helper()
		var n int64
		if err := pool.QueryRow(ctx, `SELECT coalesce(sum(used), 0) FROM usage_counters WHERE project = $1`, project).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The statement before the takes: a count of another project, in the same transaction.
	other := func(tx pgx.Tx) error {
		return quota.TakeAll(ctx, tx, now, []quota.Take{{Project: "other", Meter: quota.SMS, N: 1}},
			func(string) (quota.Limits, error) { return l, nil })
	}
	if err := takeCommitting(ctx, pool, now, l, other, quota.Take{Project: "acme", Meter: quota.SMS, N: quota.SMSUnverified - 1}); err != nil {
		t.Fatal(err)
	}
	if a, o := used("acme"), used("other"); a != quota.SMSUnverified-1 || o != 1 {
		t.Fatalf("after a commit with the takes: acme %d, other %d; want %d and 1", a, o, quota.SMSUnverified-1)
	}
	err := takeCommitting(ctx, pool, now, l, other, quota.Take{Project: "acme", Meter: quota.SMS, N: 2})
	if e := apperror.As(err); e == nil || e.Code != "daily_limit_exceeded" || e.Details["limit"] != int64(quota.SMSUnverified) {
		t.Fatalf("two past the ceiling = %v", err)
	}
	if a, o := used("acme"), used("other"); a != quota.SMSUnverified-1 || o != 1 {
		t.Fatalf("after a refusal: acme %d, other %d; want nothing of the transaction committed", a, o)
	}
	// No take at all (no ceiling on the meter): the commit alone.
	if err := takeCommitting(ctx, pool, now, quota.Of(project(v1alpha1.PlanPaid, v1alpha1.VerificationBusinessApproved, nil)), other,
		quota.Take{Project: "acme", Meter: quota.Email, N: 1}); err != nil {
		t.Fatal(err)
	}
	if o := used("other"); o != 2 {
		t.Fatalf("the commit without takes: other %d, want 2", o)
	}
	var wg sync.WaitGroup
	var taken, refused atomic.Int64
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := takeCommitting(ctx, pool, now, l, nil, quota.Take{Project: "acme", Meter: quota.SMS, N: 1})
			switch code(err) {
			case "":
				taken.Add(1)
			case "daily_limit_exceeded":
				refused.Add(1)
			default:
				t.Errorf("take: %v", err)
			}
		}()
	}
	wg.Wait()
	if taken.Load() != 1 || refused.Load() != 99 || used("acme") != quota.SMSUnverified {
		t.Fatalf("%d taken, %d refused, %d used; want 1, 99 and %d", taken.Load(), refused.Load(), used("acme"), quota.SMSUnverified)
	}
}

// TestALoweredCeilingRefuses: a counter past a ceiling lowered since (a project's agreed limit
// cut) refuses the next take; the new ceiling is what the refusal names.
func TestALoweredCeilingRefuses(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	now := time.Now()
	high := quota.Of(project(v1alpha1.PlanPaid, v1alpha1.VerificationBusinessApproved, &v1alpha1.DailyLimits{SMS: ptr(int64(100))}))
	low := quota.Of(project(v1alpha1.PlanPaid, v1alpha1.VerificationBusinessApproved, &v1alpha1.DailyLimits{SMS: ptr(int64(10))}))
	if err := take(ctx, pool, now, high, quota.Take{Project: "acme", Meter: quota.SMS, N: 50}); err != nil {
		t.Fatal(err)
	}
	err := take(ctx, pool, now, low, quota.Take{Project: "acme", Meter: quota.SMS, N: 1})
	if e := apperror.As(err); e == nil || e.Code != "daily_limit_exceeded" || e.Details["limit"] != int64(10) {
		t.Fatalf("a take past the lowered ceiling = %v", err)
	}
	if err := take(ctx, pool, now, high, quota.Take{Project: "acme", Meter: quota.SMS, N: 1}); err != nil {
		t.Fatalf("the ceiling raised again: %v", err)
	}
}

// BenchmarkTakeTogether is sends of one project taking its counter from 8 transactions at once,
// the take last and then the commit (TakeAll) or the take sent with the commit
// (TakeAllAndCommit): the row is held from the take to the commit, which the second holds for
// Postgres's time only.
func BenchmarkTakeTogether(b *testing.B) {
	pool := pgtest.NewPool(b)
	ctx := context.Background()
	l := quota.Of(project(v1alpha1.PlanPaid, v1alpha1.VerificationBusinessApproved, &v1alpha1.DailyLimits{SMS: ptr(int64(1 << 40))}))
	now := time.Now()
	sms := quota.Take{Project: "acme", Meter: quota.SMS, N: 1}
	for _, withCommit := range []bool{false, true} {
		name := "TakeAll"
		if withCommit {
			name = "TakeAllAndCommit"
		}
		b.Run(name, func(b *testing.B) {
			b.SetParallelism(4) // 4 × GOMAXPROCS transactions at once
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					var err error
					if withCommit {
						err = takeCommitting(ctx, pool, now, l, nil, sms)
					} else {
						err = take(ctx, pool, now, l, sms)
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
