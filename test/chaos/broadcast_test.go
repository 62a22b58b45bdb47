package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/test/cluster"
)

// broadcastSize is the broadcast TestBroadcastSurvivesKill sends; its small chunks make the
// fan-out last long enough for several kills.
const broadcastSize = 20_000

// TestBroadcastSurvivesKill: a broadcast whose workers are killed with SIGKILL again and again
// while they hand its recipients to the send path completes after they restart, every recipient
// with exactly one message, and its counters match its recipients.
func TestBroadcastSurvivesKill(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	c.Run("manager")
	api := c.Run("api")
	var workers []*cluster.Process
	for range 2 {
		workers = append(workers, c.Run("worker", "--broadcast-chunk", "50"))
	}
	key := c.Project("broadcast-chaos", "")
	call := func(method, path, body string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, api.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, raw)
		}
		var out map[string]any
		_ = json.Unmarshal(raw, &out)
		return out
	}
	id := call("POST", "/v1/broadcasts", `{"channel":"sms","name":"Chaos","text":"Hello {{1}}"}`)["broadcast"].(map[string]any)["id"].(string)
	for page := range broadcastSize / 1000 {
		var body bytes.Buffer
		body.WriteString(`{"contacts":[`)
		for i := range 1000 {
			if i > 0 {
				body.WriteString(",")
			}
			fmt.Fprintf(&body, `{"recipient":"+4477009%05d","templateVariables":{"1":"%d"}}`, page*1000+i, i)
		}
		body.WriteString(`]}`)
		call("POST", "/v1/broadcasts/"+id+"/contacts", body.String())
	}
	call("POST", "/v1/broadcasts/"+id+"/send", `{}`)

	ctx := context.Background()
	read := func() (status string, pending, final int) {
		if err := c.Pool.QueryRow(ctx, `SELECT status, pending_count, delivered_count + failed_count + skipped_count FROM broadcasts WHERE id = $1`,
			id).Scan(&status, &pending, &final); err != nil {
			t.Fatal(err)
		}
		return
	}
	// Kill a worker every 300 ms while recipients are still to be handed over.
	kills := 0
	deadline := time.Now().Add(3 * time.Minute)
	for {
		status, pending, _ := read()
		if status == "sending" && pending == 0 || status == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broadcast %s still %s with %d pending after 3 minutes", id, status, pending)
		}
		if status == "sending" {
			w := workers[rand.IntN(len(workers))]
			w.Kill()
			kills++
			if err := w.Restart(); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	if kills < 3 {
		t.Errorf("only %d kills during the fan-out, want at least 3", kills)
	}
	for {
		status, _, final := read()
		if status == "completed" && final == broadcastSize {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broadcast %s is %s with %d of %d final after 3 minutes", id, status, final, broadcastSize)
		}
		time.Sleep(200 * time.Millisecond)
	}

	var counters, byStatus string
	var messages, doubled, orphans int
	if err := c.Pool.QueryRow(ctx, `SELECT
			format('%s/%s/%s/%s/%s/%s/%s', total_contacts, pending_count, queued_count, sending_count, delivered_count, failed_count, skipped_count),
			(SELECT format('%s/%s/%s/%s/%s/%s/%s', count(*), count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'queued'),
				count(*) FILTER (WHERE status = 'sending'), count(*) FILTER (WHERE status = 'delivered'), count(*) FILTER (WHERE status = 'failed'),
				count(*) FILTER (WHERE status = 'skipped')) FROM broadcast_contacts WHERE broadcast_id = $1),
			(SELECT count(*) FROM messages m JOIN broadcast_contacts bc ON bc.id = m.broadcast_contact_id WHERE bc.broadcast_id = $1),
			(SELECT count(*) FROM (SELECT m.broadcast_contact_id FROM messages m JOIN broadcast_contacts bc ON bc.id = m.broadcast_contact_id
				WHERE bc.broadcast_id = $1 GROUP BY 1 HAVING count(*) > 1) d),
			(SELECT count(*) FROM broadcast_contacts bc WHERE bc.broadcast_id = $1 AND
				(bc.message_id IS NULL OR NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = bc.message_id AND m.broadcast_contact_id = bc.id)))
		FROM broadcasts WHERE id = $1`, id).Scan(&counters, &byStatus, &messages, &doubled, &orphans); err != nil {
		t.Fatal(err)
	}
	t.Logf("broadcast of %d with %d worker kills: counters %s, recipients %s, %d messages", broadcastSize, kills, counters, byStatus, messages)
	if counters != byStatus {
		t.Errorf("counters %s do not match the recipients %s", counters, byStatus)
	}
	if messages != broadcastSize || doubled != 0 || orphans != 0 {
		t.Errorf("%d messages for %d recipients; %d recipients with more than one, %d without theirs", messages, broadcastSize, doubled, orphans)
	}
}
