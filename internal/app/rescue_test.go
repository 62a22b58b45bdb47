package app_test

import (
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

// A dispatch whose worker died (kill -9) is run again within about a minute, not after the
// queue's default hour.
func TestADispatchWhoseWorkerDiedIsRunAgain(t *testing.T) {
	url := pgtest.NewDatabase(t)
	api := start(t, onDatabase(url), fastSandbox, func(c *app.Config) { c.Role = app.RoleAPI })
	_, key := sendingProject(t, api, nil, apikey.Test)
	r := api.post("/v1/messages", key, `{"to":"+15005550100","text":"Your code is 1234"}`)
	if r.status != 200 {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	id := r.body["message"].(map[string]any)["id"].(string)
	// A worker took the job a minute ago and died with it: the row says running, forever.
	if n := api.exec(`UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now() - interval '1 minute',
		attempted_by = ARRAY['worker-that-died'] WHERE kind = 'message.dispatch' AND args->>'messageId' = $1`, id); n != 1 {
		t.Fatalf("%d dispatch jobs for the message, want 1", n)
	}

	start(t, onDatabase(url), fastSandbox, func(c *app.Config) { c.Role = app.RoleWorker })
	began := time.Now()
	deadline := began.Add(2 * time.Minute)
	for messageOf(api, key, id)["status"] != "delivered" {
		if time.Now().After(deadline) {
			t.Fatalf("the message of the dead worker's job is still %v after 2 minutes", messageOf(api, key, id)["status"])
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("delivered %v after a worker started", time.Since(began).Round(time.Second))
}
