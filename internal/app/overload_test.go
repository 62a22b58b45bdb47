package app_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
)

// TestAnOverloadIsRefused: with every one of --max-requests-in-flight taken (two sends whose
// bodies are still coming), one more API request waits, then is answered 503
// service_unavailable with Retry-After: 1 and changes nothing; with as many waiting as there
// are slots, one more is refused at once; the probes still answer; once a
// slot is given back the API answers again; the refusal is counted on /metrics.
func TestAnOverloadIsRefused(t *testing.T) {
	withMetrics, addr := servingMetrics(t)
	in := start(t, fastSandbox, withMetrics, func(c *app.Config) { c.MaxRequestsInFlight = 2 })
	_, key := sendingProject(t, in, nil, apikey.Test)
	refusedBefore := 0.0
	if f := scrape(t, addr)["switchboard_api_requests_refused_busy_total"]; f != nil {
		refusedBefore = f.GetMetric()[0].GetCounter().GetValue()
	}

	// Two sends hold the two slots: their handlers wait for the rest of their bodies.
	type answer struct {
		status int
		err    error
	}
	// send posts body to /v1/messages in the background and gives its answer to answers.
	send := func(body io.Reader, answers chan<- answer) {
		req, _ := http.NewRequest(http.MethodPost, in.url+"/v1/messages", body)
		req.Header.Set("Authorization", key)
		req.Header.Set("Content-Type", "application/json")
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- answer{err: err}
				return
			}
			resp.Body.Close()
			answers <- answer{status: resp.StatusCode}
		}()
	}
	var bodies []*io.PipeWriter
	answers := make(chan answer, 2)
	for range 2 {
		pr, pw := io.Pipe()
		bodies = append(bodies, pw)
		send(pr, answers)
		if _, err := pw.Write([]byte(`{"to":"+15005550100",`)); err != nil {
			t.Fatal(err)
		}
	}
	held := func() float64 {
		if f := scrape(t, addr)["switchboard_api_requests_in_flight"]; f != nil {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
		return 0
	}
	waitFor(t, func() bool { return held() == 2 })

	messages := in.count(`SELECT count(*) FROM messages`)
	began := time.Now()
	r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"One too many"}`)
	if r.status != http.StatusServiceUnavailable || r.body["code"] != "service_unavailable" || r.header.Get("Retry-After") != "1" {
		t.Fatalf("a request past the bound = %d %v (Retry-After %q)", r.status, r.body, r.header.Get("Retry-After"))
	}
	if waited := time.Since(began); waited < 450*time.Millisecond {
		t.Errorf("refused after %v: a request waits half a second for a slot", waited)
	}
	if n := in.count(`SELECT count(*) FROM messages`); n != messages {
		t.Errorf("messages %d → %d: a refused send changed something", messages, n)
	}
	if resp, err := http.Get(in.url + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz while the API is busy: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// As many requests wait as there are slots; one more is refused at once, and the two waiting
	// are refused when their half second is over.
	waitingGauge := func() float64 {
		if f := scrape(t, addr)["switchboard_api_requests_waiting"]; f != nil {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
		return 0
	}
	waited := make(chan answer, 2)
	for range 2 {
		send(strings.NewReader(`{"to":"+15005550100","text":"Waiting"}`), waited)
	}
	waitFor(t, func() bool { return waitingGauge() == 2 })
	began = time.Now()
	if r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"One more"}`); r.status != http.StatusServiceUnavailable ||
		r.body["code"] != "service_unavailable" || r.header.Get("Retry-After") != "1" {
		t.Fatalf("a request with the waiting full = %d %v (Retry-After %q)", r.status, r.body, r.header.Get("Retry-After"))
	}
	if took := time.Since(began); took > 300*time.Millisecond {
		t.Errorf("refused after %v: with as many requests waiting as there are slots, one more is refused at once", took)
	}
	for range 2 {
		if a := <-waited; a.err != nil || a.status != http.StatusServiceUnavailable {
			t.Errorf("a waiting request = %+v, want 503 after its wait", a)
		}
	}
	waitFor(t, func() bool { return waitingGauge() == 0 })
	f := scrape(t, addr)["switchboard_api_requests_refused_busy_total"]
	if f == nil || f.GetMetric()[0].GetCounter().GetValue() != refusedBefore+4 {
		t.Errorf("refused counter = %v, want %v", f, refusedBefore+4)
	}

	// One send ends: its slot serves the next request.
	if _, err := bodies[0].Write([]byte(`"text":"Held"}`)); err != nil {
		t.Fatal(err)
	}
	bodies[0].Close()
	if a := <-answers; a.err != nil || a.status != http.StatusOK {
		t.Fatalf("the held send = %+v", a)
	}
	if r := in.get("/v1/messages", key); r.status != http.StatusOK {
		t.Fatalf("with a slot free = %d %v", r.status, r.body)
	}
	bodies[1].CloseWithError(io.ErrUnexpectedEOF)
	<-answers
	waitFor(t, func() bool { return held() == 0 })
	if got := strconv.Itoa(in.count(`SELECT count(*) FROM messages`)); got != strconv.Itoa(messages+1) {
		t.Errorf("messages = %s, want %d (the held send alone)", got, messages+1)
	}
}
