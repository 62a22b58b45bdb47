package app_test

import (
	"net"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
)

// servingMetrics serves the instance's /metrics on a free loopback address, which it returns.
func servingMetrics(t *testing.T) (option, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // the metrics server binds it again; nothing else takes it meanwhile
	return func(c *app.Config) { c.MetricsAddr = addr }, addr
}

// scrape reads the metrics endpoint as Prometheus does.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return families
}

// sample is the metric of family whose labels include labels; nil when there is none.
func sample(f *dto.MetricFamily, labels map[string]string) *dto.Metric {
	for _, m := range f.GetMetric() {
		matched := 0
		for _, l := range m.GetLabel() {
			if v, ok := labels[l.GetName()]; ok && v == l.GetValue() {
				matched++
			}
		}
		if matched == len(labels) {
			return m
		}
	}
	return nil
}

// TestMetricsAfterASend sends a message through the API with a test key (and one the API
// refuses), waits for its webhook delivery, and finds every Switchboard metric an operator
// watches on the process's /metrics: the sends' latency and count, the webhook attempts by
// outcome and their latency, the queues' depth and age, and the broadcasts under way.
func TestMetricsAfterASend(t *testing.T) {
	rcv := newHookReceiver(t)
	withMetrics, addr := servingMetrics(t)
	in := start(t, fastSandbox, rcv.trusted(), withMetrics)
	_, key := sendingProject(t, in, rcv, apikey.Test)

	r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"Hello"}`)
	if r.status != http.StatusOK {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	id := r.body["message"].(map[string]any)["id"].(string)
	if r := in.post("/v2/messages", key, `{"to":"+15005550100"}`); r.status != http.StatusBadRequest {
		t.Fatalf("a send without content = %d %v, want 400", r.status, r.body)
	}
	waitFor(t, func() bool { return len(rcv.names(id)) > 0 })

	// The worker counts an attempt once it has recorded it, just after the receiver answered.
	var families map[string]*dto.MetricFamily
	delivered := func() float64 {
		f := families["switchboard_webhook_attempts_total"]
		if m := sample(f, map[string]string{"outcome": "delivered"}); m != nil {
			return m.GetCounter().GetValue()
		}
		return 0
	}
	waitFor(t, func() bool { families = scrape(t, addr); return delivered() >= 1 })

	histogram := func(name string, labels map[string]string) uint64 {
		t.Helper()
		m := sample(families[name], labels)
		if m == nil || m.GetHistogram() == nil {
			t.Errorf("%s%v: no histogram", name, labels)
			return 0
		}
		return m.GetHistogram().GetSampleCount()
	}
	if n := histogram("switchboard_message_accept_duration_seconds", map[string]string{"api": "v1", "outcome": "accepted"}); n < 1 {
		t.Errorf("accept latency of v1 accepted sends counts %d, want the send", n)
	}
	if n := histogram("switchboard_message_accept_duration_seconds", map[string]string{"api": "v2", "outcome": "refused"}); n < 1 {
		t.Errorf("accept latency of v2 refused sends counts %d, want the refusal", n)
	}
	if m := sample(families["switchboard_messages_accepted_total"], map[string]string{"channel": "sms", "mode": "test"}); m.GetCounter().GetValue() < 1 {
		t.Errorf("switchboard_messages_accepted_total{channel=sms,mode=test} = %v, want the send", m)
	}
	if n := histogram("switchboard_webhook_attempt_duration_seconds", nil); n < 1 {
		t.Errorf("webhook attempt latency counts %d, want the delivery", n)
	}
	for _, outcome := range []string{"failed", "retry", "cancelled", "not_made"} {
		if sample(families["switchboard_webhook_attempts_total"], map[string]string{"outcome": outcome}) == nil {
			t.Errorf("switchboard_webhook_attempts_total{outcome=%q} is missing; every outcome shows from the start", outcome)
		}
	}

	gauge := func(name string, labels map[string]string) {
		t.Helper()
		m := sample(families[name], labels)
		if m == nil || m.GetGauge() == nil || m.GetGauge().GetValue() < 0 {
			t.Errorf("%s%v = %v, want a gauge of zero or more", name, labels, m)
		}
	}
	for _, queue := range []string{"default", "webhooks"} {
		gauge("switchboard_queue_depth", map[string]string{"queue": queue, "state": "available"})
		gauge("switchboard_queue_depth", map[string]string{"queue": queue, "state": "scheduled"})
		gauge("switchboard_queue_oldest_age_seconds", map[string]string{"queue": queue})
	}
	gauge("switchboard_queue_depth", map[string]string{"queue": "default", "state": "retryable"})
	gauge("switchboard_queue_depth", map[string]string{"queue": "agents", "state": "available"})
	gauge("switchboard_queue_depth", map[string]string{"queue": "agents", "state": "retryable"})
	gauge("switchboard_queue_oldest_age_seconds", map[string]string{"queue": "agents"})
	gauge("switchboard_broadcasts", map[string]string{"status": "sending"})
	gauge("switchboard_broadcast_recipients_pending", nil)
	// The process's connection pool: the send used it.
	gauge("pgxpool_max_conns", nil)
	gauge("pgxpool_acquired_conns", nil)
	if m := sample(families["pgxpool_acquire_count"], nil); m.GetCounter().GetValue() < 1 {
		t.Errorf("pgxpool_acquire_count = %v, want the send's acquisitions", m)
	}
}
