package delivery_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/pkg/webhook"
)

// failing answers 500 to the first n requests.
func failing(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = 500
	}
	return out
}

func (f *fixture) log() *delivery.Log { return delivery.NewLog(f.pool, cache) }

func (f *fixture) enqueueMode(t *testing.T, name string, mode delivery.Mode) string {
	t.Helper()
	ids := f.enqueueEvent(t, delivery.Event{Project: f.project, Name: name, Sender: f.sender.Name, Mode: mode,
		Data: map[string]any{"messageId": "msg_" + name, "status": strings.TrimPrefix(name, "message.")}}, true)
	return ids[0]
}

func (f *fixture) waitStatus(t *testing.T, id, want string) {
	t.Helper()
	waitFor(t, id+" "+want, func() bool { s, _ := f.delivery(t, id); return s == want })
}

func kindOf(err error) apperror.Kind {
	if e := apperror.As(err); e != nil {
		return e.Kind
	}
	return -1
}

// TestTheLogKeepsEachEndpointsHealth: attempts move an endpoint's last success, its run of
// failures and the day's success rate.
func TestTheLogKeepsEachEndpointsHealth(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, 500, 503)
	f := newFixture(t, rcv, v1alpha1.SenderWebhook{URL: rcvURL(rcv)}, delivery.ClientOptions{Allow: loopback})
	log := f.log()
	ctx := context.Background()

	first := f.enqueueMode(t, "message.sent", delivery.ModeLive)
	f.waitStatus(t, first, "delivered")
	h, err := log.EndpointHealth(ctx, f.project, delivery.SenderEndpoint("support"))
	if err != nil {
		t.Fatal(err)
	}
	if h.Attempts != 3 || h.Succeeded != 1 || h.ConsecutiveFailures != 0 || h.FailingSince != nil || h.LastSuccessAt == nil ||
		h.LastFailureAt == nil || !h.LastSuccessAt.After(*h.LastFailureAt) || h.Disabled != nil || h.URL != rcvURL(rcv) {
		t.Fatalf("after 500, 503, 200: %+v", h)
	}
	if r := h.SuccessRate(); r == nil || *r < 0.33 || *r > 0.34 {
		t.Errorf("success rate %v, want 1/3", r)
	}

	rcv.mu.Lock()
	rcv.answers = failing(10)
	rcv.mu.Unlock()
	second := f.enqueueMode(t, "message.failed", delivery.ModeLive)
	f.waitStatus(t, second, "failed")
	h, _ = log.EndpointHealth(ctx, f.project, delivery.SenderEndpoint("support"))
	if h.Attempts != 8 || h.Succeeded != 1 || h.ConsecutiveFailures != 5 || h.FailingSince == nil || !h.FailingSince.After(*h.LastSuccessAt) {
		t.Fatalf("after five more failures: %+v", h)
	}
	// Another project's endpoints are not this one's.
	other := setup(t, v1alpha1.SenderWebhook{URL: rcvURL(rcv)}, delivery.ClientOptions{Allow: loopback}, nil, 0)
	if h, err := log.EndpointHealth(ctx, other.project, delivery.SenderEndpoint("support")); err != nil || h.LastAttemptAt != nil {
		t.Errorf("a project never attempted: %+v, %v", h, err)
	}
}

// TestAReplayIsOneMoreAttemptWithTheSameEventID: a failed delivery replayed goes out once more
// with its event id and a fresh signature, logged as a replay; what cannot be replayed says why
// and changes nothing.
func TestAReplayIsOneMoreAttemptWithTheSameEventID(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, failing(5)...)
	f := newFixture(t, rcv, v1alpha1.SenderWebhook{URL: rcvURL(rcv)}, delivery.ClientOptions{Allow: loopback})
	log := f.log()
	ctx := context.Background()
	id := f.enqueueMode(t, "message.delivered", delivery.ModeLive)
	f.waitStatus(t, id, "failed")

	// Not found from another mode or another project.
	if _, err := log.Replay(ctx, f.project, true, id); kindOf(err) != apperror.NotFound {
		t.Errorf("a test key replays a live delivery: %v", err)
	}
	if _, err := log.Replay(ctx, "another-project", false, id); kindOf(err) != apperror.NotFound {
		t.Errorf("another project replays it: %v", err)
	}
	// One still being attempted is not replayed.
	if _, err := f.pool.Exec(ctx, "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now() + interval '1 hour' WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	if _, err := log.Replay(ctx, f.project, false, id); kindOf(err) != apperror.Conflict {
		t.Errorf("replay of a pending delivery: %v", err)
	}
	if _, err := f.pool.Exec(ctx, "UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	if s, n := f.delivery(t, id); s != "failed" || n != 5 {
		t.Fatalf("refused replays changed the delivery: %s, %d attempts", s, n)
	}

	d, err := log.Replay(ctx, f.project, false, id)
	if err != nil || d.Status != "pending" || d.AttemptLimit != 6 || d.Replays != 1 {
		t.Fatalf("Replay = %+v, %v", d, err)
	}
	f.waitStatus(t, id, "delivered")
	if rcv.count() != 6 {
		t.Fatalf("receiver got %d requests, want 6", rcv.count())
	}
	req, body, _ := rcv.request(5)
	if err := webhook.Verify(req.Header.Get(webhook.SignatureHeader), body, f.secret(t), time.Minute, time.Now()); err != nil {
		t.Errorf("the replay's signature: %v", err)
	}
	var env struct{ ID string }
	_ = json.Unmarshal(body, &env)
	if env.ID != id {
		t.Errorf("replayed event id %q, want %q", env.ID, id)
	}
	got, attempts, err := log.Get(ctx, f.project, false, id)
	if err != nil || got.Status != "delivered" || len(attempts) != 6 {
		t.Fatalf("Get = %+v, %d attempts, %v", got, len(attempts), err)
	}
	for i, a := range attempts {
		if a.Replay != (i == 5) {
			t.Errorf("attempt %d replay = %v", a.Attempt, a.Replay)
		}
	}
	if *attempts[5].StatusCode != 200 || *attempts[0].StatusCode != 500 || *attempts[0].ResponseBody != `{"ok":false}` {
		t.Errorf("attempt log: first %+v, replay %+v", attempts[0], attempts[5])
	}
	// A delivered one may be replayed too (a receiver that lost what it took).
	if d, err := log.Replay(ctx, f.project, false, id); err != nil || d.AttemptLimit != 7 {
		t.Fatalf("replay of a delivered delivery: %+v, %v", d, err)
	}
	f.waitStatus(t, id, "delivered")

	// One an erasure emptied is not sent again.
	if _, err := f.pool.Exec(ctx, "UPDATE webhook_deliveries SET erased = true, data = '{}' WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	if _, err := log.Replay(ctx, f.project, false, id); kindOf(err) != apperror.Conflict {
		t.Errorf("replay of an erased delivery: %v", err)
	}
}

// TestReplayingAnEndpointsFailuresInARange: every failed delivery of the endpoint in the range
// goes out again, and none other.
func TestReplayingAnEndpointsFailuresInARange(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, failing(15)...)
	f := newFixture(t, rcv, v1alpha1.SenderWebhook{URL: rcvURL(rcv)}, delivery.ClientOptions{Allow: loopback})
	log := f.log()
	ctx := context.Background()
	start := time.Now()
	var failed []string
	for _, e := range []string{"message.sent", "message.delivered", "message.read"} {
		failed = append(failed, f.enqueueMode(t, e, delivery.ModeLive))
	}
	for _, id := range failed {
		f.waitStatus(t, id, "failed")
	}
	testOne := f.enqueueMode(t, "message.queued", delivery.ModeTest)
	f.waitStatus(t, testOne, "delivered")
	other := setup(t, v1alpha1.SenderWebhook{URL: rcvURL(rcv)}, delivery.ClientOptions{Allow: loopback}, nil, 0)
	before := rcv.count()

	for _, bad := range []struct {
		since time.Time
		why   string
	}{{time.Time{}, "no since"}, {time.Now().Add(-8 * 24 * time.Hour), "past the replay window"}, {time.Now().Add(time.Hour), "after until"}} {
		if _, err := log.ReplayFailed(ctx, f.project, false, delivery.SenderEndpoint("support"), bad.since, time.Time{}); kindOf(err) != apperror.Invalid {
			t.Errorf("%s: %v", bad.why, err)
		}
	}
	if n, err := log.ReplayFailed(ctx, other.project, false, delivery.SenderEndpoint("support"), start, time.Time{}); err != nil || n != 0 {
		t.Errorf("another project's replay took %d, %v", n, err)
	}
	if n, err := log.ReplayFailed(ctx, f.project, true, delivery.SenderEndpoint("support"), start, time.Time{}); err != nil || n != 0 {
		t.Errorf("a test key's replay took %d live deliveries, %v", n, err)
	}
	if rcv.count() != before {
		t.Fatal("refused replays sent something")
	}
	n, err := log.ReplayFailed(ctx, f.project, false, delivery.SenderEndpoint("support"), start, time.Time{})
	if err != nil || n != 3 {
		t.Fatalf("ReplayFailed = %d, %v", n, err)
	}
	for _, id := range failed {
		f.waitStatus(t, id, "delivered")
	}
	if s, n := f.delivery(t, testOne); s != "delivered" || n != 1 {
		t.Errorf("the delivered test delivery: %s after %d attempts", s, n)
	}
	// The log lists them, newest first, by status and mode.
	rows, err := log.List(ctx, f.project, false, delivery.Filter{Limit: 10, Status: "delivered"})
	if err != nil || len(rows) != 3 || rows[0].ID != failed[2] || rows[2].ID != failed[0] {
		t.Fatalf("List(delivered, live) = %d rows, %v", len(rows), err)
	}
	rows, _ = log.List(ctx, f.project, true, delivery.Filter{Limit: 10})
	if len(rows) != 1 || rows[0].ID != testOne {
		t.Errorf("a test key lists %d deliveries", len(rows))
	}
	// A page continues before the last row shown.
	page, _ := log.List(ctx, f.project, false, delivery.Filter{Limit: 2})
	next, _ := log.List(ctx, f.project, false, delivery.Filter{Limit: 2, BeforeTime: &page[1].CreatedAt, BeforeID: &page[1].ID})
	if len(page) != 2 || len(next) != 1 || next[0].ID != failed[0] {
		t.Errorf("pages %d then %d", len(page), len(next))
	}
	if rows, _ := log.List(ctx, f.project, false, delivery.Filter{Limit: 10, Event: "message.read", MessageID: "msg_message.read"}); len(rows) != 1 {
		t.Errorf("by event and message: %d rows", len(rows))
	}
	if _, err := log.List(ctx, f.project, false, delivery.Filter{Limit: 10, Status: "lost"}); kindOf(err) != apperror.Invalid {
		t.Errorf("an unknown status: %v", err)
	}
}

func enabledCondition(t *testing.T, f *fixture) *metav1.Condition {
	t.Helper()
	var s v1alpha1.Sender
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(f.sender), &s); err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionWebhookEnabled)
}

// TestAnEndpointFailingTooLongIsDisabledUntilEnabled: the disabler turns an endpoint failing
// for longer than its limit off (a condition, an event); its deliveries then fail without an
// attempt; enabling it sends what comes next and replays nothing by itself; so does a change
// of the spec.
func TestAnEndpointFailingTooLongIsDisabledUntilEnabled(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, failing(5)...)
	f := newFixture(t, rcv, v1alpha1.SenderWebhook{URL: rcvURL(rcv)}, delivery.ClientOptions{Allow: loopback})
	log := f.log()
	ctx := context.Background()
	id := f.enqueueMode(t, "message.failed", delivery.ModeLive)
	f.waitStatus(t, id, "failed")

	events := record.NewFakeRecorder(10)
	disabler := &delivery.Disabler{Pool: f.pool, Client: cache, Events: events, After: time.Hour}
	if err := disabler.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if c := enabledCondition(t, f); c != nil {
		t.Fatalf("disabled after failing for seconds: %+v", c)
	}
	// Failing for two hours (the attempts' times moved back).
	if _, err := f.pool.Exec(ctx, `UPDATE webhook_endpoints SET failing_since = now() - interval '2 hours' WHERE project = $1`, f.project); err != nil {
		t.Fatal(err)
	}
	if err := disabler.Round(ctx); err != nil {
		t.Fatal(err)
	}
	c := enabledCondition(t, f)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonFailingTooLong || !strings.Contains(c.Message, "5 in a row") {
		t.Fatalf("WebhookEnabled = %+v", c)
	}
	select {
	case e := <-events.Events:
		if !strings.HasPrefix(e, "Warning FailingTooLong webhook disabled") {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no event on the sender")
	}
	waitFor(t, "the cache to see it disabled", func() bool {
		h, _ := log.EndpointHealth(ctx, f.project, delivery.SenderEndpoint("support"))
		return h.Disabled != nil
	})

	// Nothing is sent to it: a new delivery fails without an attempt.
	sent := rcv.count()
	while := f.enqueueMode(t, "message.sent", delivery.ModeLive)
	f.waitStatus(t, while, "failed")
	_, attempts, _ := log.Get(ctx, f.project, false, while)
	if got, _, _ := log.Get(ctx, f.project, false, while); len(attempts) != 0 || got.LastError == nil || !strings.Contains(*got.LastError, "disabled") {
		t.Errorf("a delivery to a disabled endpoint: %+v, %d attempts", got, len(attempts))
	}

	// Enabled again: nothing is replayed by itself, the next event goes.
	h, err := log.Enable(ctx, f.project, delivery.SenderEndpoint("support"), "test")
	if err != nil || h.Disabled != nil {
		t.Fatalf("Enable = %+v, %v", h, err)
	}
	if c := enabledCondition(t, f); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonReEnabled {
		t.Fatalf("after Enable: %+v", c)
	}
	waitFor(t, "the cache to see it enabled", func() bool {
		h, _ := log.EndpointHealth(ctx, f.project, delivery.SenderEndpoint("support"))
		return h.Disabled == nil
	})
	next := f.enqueueMode(t, "message.read", delivery.ModeLive)
	f.waitStatus(t, next, "delivered")
	if s, _ := f.delivery(t, while); s != "failed" || rcv.count() != sent+1 {
		t.Errorf("enabling replayed: %s, receiver got %d more", s, rcv.count()-sent)
	}
	// Enabled a moment ago, the endpoint is not disabled again for its old failures.
	if _, err := f.pool.Exec(ctx, `UPDATE webhook_endpoints SET failing_since = now() - interval '2 hours', last_success_at = NULL WHERE project = $1`, f.project); err != nil {
		t.Fatal(err)
	}
	if err := disabler.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if c := enabledCondition(t, f); c.Status != metav1.ConditionTrue {
		t.Errorf("disabled again at once: %+v", c)
	}

	// Hours later, with no attempt since it was enabled, it is left alone; with failures since,
	// it is disabled again.
	disabler.Now = func() time.Time { return time.Now().Add(3 * time.Hour) }
	if err := disabler.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if c := enabledCondition(t, f); c.Status != metav1.ConditionTrue {
		t.Fatalf("disabled for failures from before it was enabled: %+v", c)
	}
	if _, err := f.pool.Exec(ctx, `UPDATE webhook_endpoints SET last_failure_at = now() + interval '1 minute' WHERE project = $1`, f.project); err != nil {
		t.Fatal(err)
	}
	if err := disabler.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if c := enabledCondition(t, f); c.Status != metav1.ConditionFalse {
		t.Fatalf("not disabled hours after it was enabled and failed again: %+v", c)
	}
	// Then a change of the spec (a new URL) enables it.
	var s v1alpha1.Sender
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(f.sender), &s); err != nil {
		t.Fatal(err)
	}
	s.Spec.Webhook.URL = rcvURL(rcv) + "?v=2"
	if err := k8s.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a spec change to enable it", func() bool {
		c := enabledCondition(t, f)
		return c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonSpecChanged
	})
}
