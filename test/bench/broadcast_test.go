package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/test/cluster"
)

// broadcastRecipients is the size of the broadcast the bench sends (the 100,000).
const broadcastRecipients = 100_000

// broadcastFigures are one broadcast's times: adding its recipients through the API, and from
// send to every recipient accepted (its message stored and queued) and to every message final in
// the sandbox.
type broadcastFigures struct {
	recipients      int
	adding          time.Duration // every POST …/contacts of 1,000, one after another
	accepted, final time.Duration
	exact           bool   // the counters match the recipients and the messages
	counters        string // what they were, when not
}

// runBroadcast sends a broadcast of n recipients (a multiple of 1,000, at most 1,000,000) through
// the layout's processes.
func runBroadcast(b *testing.B, c *cluster.Cluster, apiURL, project string, n int) broadcastFigures {
	call := caller(b, apiURL, c.Project(project, ""))
	id := call("POST", "/v1/broadcasts", `{"channel":"sms","name":"Benchmark","text":"Hi {{name}}, the benchmark says hello"}`)["broadcast"].(map[string]any)["id"].(string)
	f := broadcastFigures{recipients: n}
	adding := time.Now()
	// +447700900000 onwards, as the 100,000 always were, then round from +447700000000.
	addRecipients(b, call, id, n, func(r int) string { return fmt.Sprintf("+447700%06d", (900_000+r)%1_000_000) })
	f.adding = time.Since(adding)

	began := time.Now()
	call("POST", "/v1/broadcasts/"+id+"/send", `{}`)
	ctx := context.Background()
	within := 10*time.Minute + time.Duration(n)*time.Millisecond // a million: 27 minutes
	for f.final == 0 {
		if time.Since(began) > within {
			b.Fatalf("broadcast of %d not final after %v", n, within)
		}
		var pending, done int
		if err := c.Pool.QueryRow(ctx, `SELECT pending_count, delivered_count + failed_count + skipped_count FROM broadcasts WHERE id = $1 AND status <> 'pending_review'`,
			id).Scan(&pending, &done); err == nil {
			if pending == 0 && f.accepted == 0 {
				f.accepted = time.Since(began)
			}
			if done == n {
				f.final = time.Since(began)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Counted by Postgres: a million rows are never read into the bench.
	f.exact, f.counters = broadcastExact(b, c, id, n)
	return f
}

// caller calls the REST API with key, failing the benchmark on an error answer.
func caller(b *testing.B, apiURL, key string) func(method, path, body string) map[string]any {
	hc := &http.Client{}
	return func(method, path, body string) map[string]any {
		req, err := http.NewRequest(method, apiURL+path, strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			b.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, raw)
		}
		var out map[string]any
		_ = json.Unmarshal(raw, &out)
		return out
	}
}

// broadcastExact tells whether broadcast id's counters are its recipients' statuses (and it is
// completed), and every one of its n recipients has exactly one message; counters says what
// they were.
func broadcastExact(b *testing.B, c *cluster.Cluster, id string, n int) (exact bool, counters string) {
	var byCounter, byStatus string
	var messages, recipients int
	if err := c.Pool.QueryRow(context.Background(), `SELECT
			format('total %s pending %s queued %s sending %s delivered %s failed %s skipped %s status %s', total_contacts, pending_count,
				queued_count, sending_count, delivered_count, failed_count, skipped_count, status),
			(SELECT format('total %s pending %s queued %s sending %s delivered %s failed %s skipped %s status %s', count(*),
				count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'queued'), count(*) FILTER (WHERE status = 'sending'),
				count(*) FILTER (WHERE status = 'delivered'), count(*) FILTER (WHERE status = 'failed'), count(*) FILTER (WHERE status = 'skipped'), 'completed')
			 FROM broadcast_contacts WHERE broadcast_id = $1),
			(SELECT count(*) FROM messages m JOIN broadcast_contacts bc ON bc.id = m.broadcast_contact_id WHERE bc.broadcast_id = $1),
			(SELECT count(DISTINCT bc.id) FROM messages m JOIN broadcast_contacts bc ON bc.id = m.broadcast_contact_id WHERE bc.broadcast_id = $1)
		FROM broadcasts WHERE id = $1`, id).Scan(&byCounter, &byStatus, &messages, &recipients); err != nil {
		b.Fatal(err)
	}
	return byCounter == byStatus && messages == n && recipients == n,
		fmt.Sprintf("counters: %s; recipients: %s; %d messages for %d recipients", byCounter, byStatus, messages, recipients)
}

// addRecipients adds n recipients to draft id, 1,000 a request (the API's most): recipient(i)
// each, named R<i> in the templates.
func addRecipients(b *testing.B, call func(method, path, body string) map[string]any, id string, n int, recipient func(int) string) {
	for page := range n / 1000 {
		var body bytes.Buffer
		body.WriteString(`{"contacts":[`)
		for i := range 1000 {
			if i > 0 {
				body.WriteString(",")
			}
			n := page*1000 + i
			fmt.Fprintf(&body, `{"recipient":%q,"templateVariables":{"name":"R%d"}}`, recipient(n), n)
		}
		body.WriteString(`]}`)
		if added := call("POST", "/v1/broadcasts/"+id+"/contacts", body.String())["added"]; added != 1000.0 {
			b.Fatalf("page %d: added %v", page, added)
		}
	}
}
