// Package quota keeps the sending limits of the spec (Limits / Sending limits): the daily
// ceilings per channel group by plan and verification, the Free plan's monthly allowance of
// conversational messages (both directions) and its email caps. Counters live in Postgres
// (usage_counters) and are taken inside the transaction that stores the message, with an upsert
// that refuses to pass the ceiling, so concurrent sends cannot overshoot. Test traffic has
// counters of its own.
package quota

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Meter is a group of channels counted together.
type Meter string

const (
	SMS            Meter = "sms"            // sms and sms_oneway
	Voice          Meter = "voice"          // voice
	Conversational Meter = "conversational" // whatsapp, telegram, instagram, messenger
	Email          Meter = "email"          // email
)

// MeterOf is the meter a channel counts on; ok is false for a channel no limit counts.
func MeterOf(channel string) (m Meter, ok bool) {
	switch v1alpha1.Channel(channel) {
	case v1alpha1.ChannelSMS, v1alpha1.ChannelSMSOneway:
		return SMS, true
	case v1alpha1.ChannelVoice:
		return Voice, true
	case v1alpha1.ChannelWhatsApp, v1alpha1.ChannelTelegram, v1alpha1.ChannelInstagram, v1alpha1.ChannelMessenger:
		return Conversational, true
	case v1alpha1.ChannelEmail:
		return Email, true
	}
	return "", false
}

// Period is what a counter counts over.
type Period string

const (
	Day   Period = "day"   // a UTC day; resets at 00:00 UTC
	Month Period = "month" // a calendar month (UTC); resets on the 1st
)

// Unlimited is a ceiling that is not there.
const Unlimited int64 = -1

// The spec's numbers (Limits / Sending limits).
const (
	SMSUnverified            = 25
	SMSContactVerified       = 200
	SMSVerified              = 10_000
	VoiceUnverified          = 5
	VoiceFree                = 50
	ConversationalUnverified = 100
	ConversationalFree       = 250
	EmailFreeDaily           = 100
	EmailFreeMonthly         = 3_000
	ConversationalFreeMonth  = 2_000
)

// Limits are a project's ceilings: per meter, the daily ceiling and the monthly allowance
// (Unlimited when there is none).
type Limits struct {
	Daily   map[Meter]int64
	Monthly map[Meter]int64
}

// Of is what p's plan, verification and agreed limits allow. A nil project (a namespace
// without one) gets the Free plan with nothing verified.
func Of(p *v1alpha1.Project) Limits {
	plan, level := v1alpha1.PlanFree, v1alpha1.VerificationNone
	var agreed *v1alpha1.DailyLimits
	if p != nil {
		if p.Spec.Plan != "" {
			plan = p.Spec.Plan
		}
		if p.Spec.Verification != "" {
			level = p.Spec.Verification
		}
		agreed = p.Spec.DailyLimits
	}
	free := plan == v1alpha1.PlanFree
	l := Limits{Daily: map[Meter]int64{}, Monthly: map[Meter]int64{
		SMS: Unlimited, Voice: Unlimited, Conversational: Unlimited, Email: Unlimited}}
	switch level {
	case v1alpha1.VerificationNone:
		l.Daily[SMS], l.Daily[Voice], l.Daily[Conversational] = SMSUnverified, VoiceUnverified, ConversationalUnverified
	default:
		l.Daily[SMS] = SMSVerified
		if level == v1alpha1.VerificationContact {
			l.Daily[SMS] = SMSContactVerified
		}
		l.Daily[Voice], l.Daily[Conversational] = Unlimited, Unlimited
		if free {
			l.Daily[Voice], l.Daily[Conversational] = VoiceFree, ConversationalFree
		}
	}
	l.Daily[Email] = Unlimited
	if free {
		l.Daily[Email], l.Monthly[Email], l.Monthly[Conversational] = EmailFreeDaily, EmailFreeMonthly, ConversationalFreeMonth
	}
	if agreed != nil {
		for m, v := range map[Meter]*int64{SMS: agreed.SMS, Voice: agreed.Voice, Conversational: agreed.Conversational, Email: agreed.Email} {
			if v != nil {
				l.Daily[m] = *v
			}
		}
	}
	return l
}

// Take is units one project takes on a meter. An inbound take counts only toward the monthly
// allowance (daily ceilings are about sending).
type Take struct {
	Project  string
	TestMode bool
	Meter    Meter
	Inbound  bool
	N        int64
}

// periods are the counters a take counts on, with their start at now.
func periods(now time.Time) []struct {
	period Period
	start  time.Time
} {
	now = now.UTC()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	return []struct {
		period Period
		start  time.Time
	}{{Day, day}, {Month, day.AddDate(0, 0, 1-day.Day())}}
}

// Reset is when the counter of period that counts at now starts again.
func Reset(period Period, now time.Time) time.Time {
	p := periods(now)
	if period == Day {
		return p[0].start.AddDate(0, 0, 1)
	}
	return p[1].start.AddDate(0, 1, 0)
}

// TakeAll takes the units of takes inside tx (the send's transaction), at now, within the
// limits limitsOf gives each project, in one round trip. Counters are taken in one order
// (project, mode, meter, period), so concurrent transactions wait for each other rather than
// deadlock. The first ceiling passed is the error (daily: 429 daily_limit_exceeded; monthly: 429
// a2p_limit_exceeded or, for email, daily_limit_exceeded naming the month); it fails tx, and the
// caller must roll back.
func TakeAll(ctx context.Context, tx pgx.Tx, now time.Time, takes []Take, limitsOf func(project string) (Limits, error)) error {
	return take(ctx, tx, now, takes, limitsOf, false)
}

// TakeAllAndCommit is TakeAll as tx's last statements, sent with its COMMIT: the counters, which
// every send of a project waits on, are held only while Postgres runs the takes and the commit.
// On a refusal nothing was committed and the caller rolls back. Any other error may come after
// the commit (a connection lost on the way back): ErrCommitUnknown wraps it then.
func TakeAllAndCommit(ctx context.Context, tx pgx.Tx, now time.Time, takes []Take, limitsOf func(project string) (Limits, error)) error {
	return take(ctx, tx, now, takes, limitsOf, true)
}

// ErrCommitUnknown is an error after which the transaction may or may not have committed.
type ErrCommitUnknown struct{ Err error }

func (e *ErrCommitUnknown) Error() string { return "commit may have happened: " + e.Err.Error() }
func (e *ErrCommitUnknown) Unwrap() error { return e.Err }

// counted is one counter a take counts on, with what refuses it.
type counted struct {
	meter  Meter
	period Period
	limit  int64
}

func take(ctx context.Context, tx pgx.Tx, now time.Time, takes []Take, limitsOf func(project string) (Limits, error), commit bool) error {
	merged := map[Take]int64{}
	for _, t := range takes {
		k := t
		k.N = 0
		merged[k] += t.N
	}
	keys := make([]Take, 0, len(merged))
	for k, n := range merged {
		k.N = n
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.Project != b.Project {
			return a.Project < b.Project
		}
		if a.TestMode != b.TestMode {
			return !a.TestMode
		}
		if a.Meter != b.Meter {
			return a.Meter < b.Meter
		}
		return !a.Inbound && b.Inbound
	})
	limits := map[string]Limits{}
	var args []db.TakeUsageParams
	var what []counted
	for _, k := range keys {
		l, ok := limits[k.Project]
		if !ok {
			var err error
			if l, err = limitsOf(k.Project); err != nil {
				return err
			}
			limits[k.Project] = l
		}
		for _, p := range periods(now) {
			lim := l.Daily[k.Meter]
			if p.period == Month {
				lim = l.Monthly[k.Meter]
			}
			if lim == Unlimited || (k.Inbound && p.period == Day) {
				continue // nothing to enforce, and no row for every send to wait on
			}
			args = append(args, db.TakeUsageParams{Project: k.Project, TestMode: k.TestMode, Meter: string(k.Meter),
				Period: string(p.period), PeriodStart: p.start, N: k.N, Lim: lim})
			what = append(what, counted{meter: k.Meter, period: p.period, limit: lim})
		}
	}
	if len(args) == 0 && !commit {
		return nil
	}
	refused, err := db.Planned(tx).TakeUsages(ctx, args, commit)
	switch {
	case refused >= 0:
		c := what[refused]
		return exceeded(c.meter, c.period, c.limit, now)
	case err == nil:
		return nil
	case commit && !failedInPostgres(err):
		return &ErrCommitUnknown{Err: err}
	default:
		return fmt.Errorf("count usage: %w", err)
	}
}

// failedInPostgres tells that Postgres answered err: the statement, and the commit after it,
// did not happen.
func failedInPostgres(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr)
}

// GiveBack returns n units of the month's allowance, at when (the message's creation): a failed
// send is not counted against it. Daily ceilings count attempts and keep them.
func GiveBack(ctx context.Context, tx pgx.Tx, project string, testMode bool, meter Meter, n int64, when time.Time) error {
	p := periods(when)[1]
	if err := db.Planned(tx).GiveBackUsage(ctx, db.GiveBackUsageParams{Project: project, TestMode: testMode, Meter: string(meter),
		Period: string(Month), PeriodStart: p.start, N: n}); err != nil {
		return fmt.Errorf("give back %s usage of %s: %w", meter, project, err)
	}
	return nil
}

// exceeded is the answer to a send past a ceiling. Existing clients retry a 429 unless told not
// to: the API adds X-Should-Retry: false for these codes.
func exceeded(m Meter, p Period, limit int64, now time.Time) *apperror.Error {
	reset := Reset(p, now)
	details := map[string]any{"limit": limit, "channel": string(m), "period": string(p), "resetAt": reset.Format(time.RFC3339)}
	if p == Month && m == Conversational {
		e := apperror.New(apperror.RateLimited, "a2p_limit_exceeded", fmt.Sprintf(
			"The Free plan's %d messages this month on whatsapp, telegram, instagram and messenger are used up; they come back on %s. Upgrade to a paid plan to send without a monthly cap.",
			limit, reset.Format("January 2")))
		details["upgrade"] = map[string]any{"plan": string(v1alpha1.PlanPaid), "monthlyLimit": nil}
		e.Details = details
		return e
	}
	what := map[Meter]string{SMS: "SMS (sms and sms_oneway)", Voice: "voice", Conversational: "whatsapp, telegram, instagram and messenger",
		Email: "email"}[m]
	when := "today; the count starts again at 00:00 UTC"
	if p == Month {
		when = "this month; the count starts again on the 1st"
	}
	e := apperror.New(apperror.RateLimited, "daily_limit_exceeded",
		fmt.Sprintf("The project's ceiling of %d %s messages is reached %s.", limit, what, when))
	e.Details = details
	return e
}
