package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/randid"
	"github.com/switchboard-io/switchboard/test/cluster"
)

// The year row (SWITCHBOARD_BENCH_ONLY=year): the same measurements on an empty database and on
// one filled with a year of a mid-size installation's traffic, in one sitting; then a month of
// partitions dropped while sends go on. The fill is COPYed straight into daily partitions.
const (
	yearDays         = 365
	yearProjects     = 1_000
	yearListShare    = 0.01 // of the messages, the measured project's
	yearRecipients   = 200  // per tenant project
	yearListContacts = 2_000
	yearDeliveries   = 3 // message.queued, message.sent, message.delivered
	yearKeyShare     = 0.2
	yearKeyDays      = 7 // the idempotency keys' default retention
	yearLifeRate     = 200.0
	yearLifeSends    = 5_000
	yearListRequests = 300
	yearDropDays     = 30
	yearDropClients  = 8
)

// yearMessages is the simulated year's message count: SWITCHBOARD_BENCH_YEAR_MESSAGES, or ten
// million (a year at 100 million needs about 290 GB of disk).
func yearMessages(b *testing.B) int {
	v := os.Getenv("SWITCHBOARD_BENCH_YEAR_MESSAGES")
	if v == "" {
		return 10_000_000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < yearDays*100 {
		b.Fatalf("SWITCHBOARD_BENCH_YEAR_MESSAGES=%q: want a count of at least %d", v, yearDays*100)
	}
	return n
}

type yearFigures struct {
	messages, deliveries, attempts, keys, conversations int64
	fillTook                                            time.Duration
	bytes                                               map[string]int64 // by table, with indexes
	empty, year                                         phaseFigures
	drop                                                dropFigures
	// paired are acceptance rounds taken in turn against an empty installation and the year.
	paired []pairedRound
}

// pairedRound is one round of sends to each installation, one after the other.
type pairedRound struct {
	emptyRate, yearRate float64
	emptyP99, yearP99   time.Duration
}

// Rounds of the paired acceptance comparison: each round sends pairedSends to each installation.
const (
	pairedRounds = 6
	pairedSends  = 5_000
)

// phaseFigures are one database's: the acceptance path, lifecycles at a fixed rate (send to
// message.delivered webhook: the status path and webhook delivery), a webhook backlog drained,
// and the list endpoints.
type phaseFigures struct {
	sendRate     float64
	sendP99      time.Duration
	lifeP99      time.Duration
	lifeRate     float64
	deliveryRate float64
	lists        []listFigure
	// sendWaits counts what the database's active backends were waiting on while sends were
	// accepted, sampled every few milliseconds ("CPU" when on none): where a tail comes from.
	sendWaits map[string]int
}

// sampleWaits tallies the wait events of the database's active backends into *into until the
// returned func is called.
func sampleWaits(c *cluster.Cluster, into *map[string]int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	counts := map[string]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			rows, err := c.Pool.Query(ctx, `SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity
				WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()`)
			if err == nil {
				waits, _ := pgx.CollectRows(rows, pgx.RowTo[string])
				for _, w := range waits {
					counts[w]++
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return func() {
		cancel()
		<-done
		*into = counts
	}
}

// topWaits renders the commonest waits of a tally, with their shares.
func topWaits(counts map[string]int) string {
	total := 0
	keys := make([]string, 0, len(counts))
	for k, n := range counts {
		total += n
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return counts[b] - counts[a] })
	var parts []string
	for i, k := range keys {
		if i == 6 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.0f %%", k, 100*float64(counts[k])/float64(max(total, 1))))
	}
	return fmt.Sprintf("%s (%d samples)", strings.Join(parts, ", "), total)
}

type listFigure struct {
	name     string
	p50, p99 time.Duration
}

type dropFigures struct {
	partitions      int
	took            []time.Duration // by table
	tables          []string
	sendP99Before   time.Duration
	sendMaxBefore   time.Duration
	sendP99During   time.Duration
	sendMaxDuring   time.Duration
	sendRateBefore  float64
	sendRateDuring  float64
	sendsDuringDrop int
}

func runYear(b *testing.B, c *cluster.Cluster, rcv *receiver) *yearFigures {
	n := yearMessages(b)
	f := &yearFigures{bytes: map[string]int64{}}
	// Deliveries and attempts are kept the year too (the default is 30 days), as the fill holds them.
	proc := c.Run("all", "--retain-webhook-deliveries-days", "365")
	b.Cleanup(func() { // what the process logged as errors, when the row fails (the cluster shows only the last lines)
		if b.Failed() {
			for _, l := range strings.Split(proc.Tail(1_000_000), "\n") {
				if strings.Contains(l, `"level":"error"`) {
					b.Log(l)
				}
			}
		}
	})
	listKey := c.Project("year-lists", "")
	f.empty = measureYearPhase(b, c, rcv, proc, "empty", listKey)

	proc.Stop()
	began := time.Now()
	fillYear(b, c, n, f)
	f.fillTook = time.Since(began)
	proc.Start()
	f.year = measureYearPhase(b, c, rcv, proc, "year", listKey)
	f.paired = pairedAccepts(b, c, proc)
	f.drop = dropAMonth(b, c, proc)
	proc.Stop()
	return f
}

// pairedAccepts compares acceptance on the year with an empty installation's in the same minutes:
// a second installation (its own control plane and database, the same binary) takes rounds of
// sends in turn with the year's, in alternating order, each round's messages drained before the
// next. The empty and year phases above are ten minutes or more apart, and this machine's speed
// drifts more than the 10 % the target allows over that time; rounds taken in turn see the same
// machine.
func pairedAccepts(b *testing.B, year *cluster.Cluster, yearProc *cluster.Process) []pairedRound {
	empty := cluster.Start(b, cluster.Options{})
	emptyProc := empty.Run("all")
	defer emptyProc.Stop()
	ekey, ykey := empty.Project("paired-sends", ""), year.Project("paired-sends", "")
	closedLoop(b, emptyProc.URL, ekey, warmUpSends, sendClients)
	closedLoop(b, yearProc.URL, ykey, warmUpSends, sendClients)
	waitDrained(b, empty, "paired-sends")
	waitDrained(b, year, "paired-sends")
	rounds := make([]pairedRound, pairedRounds)
	for i := range rounds {
		r := &rounds[i]
		sendEmpty := func() {
			r.emptyRate, r.emptyP99 = closedLoop(b, emptyProc.URL, ekey, pairedSends, sendClients)
			waitDrained(b, empty, "paired-sends")
		}
		sendYear := func() {
			r.yearRate, r.yearP99 = closedLoop(b, yearProc.URL, ykey, pairedSends, sendClients)
			waitDrained(b, year, "paired-sends")
		}
		if i%2 == 0 {
			sendEmpty()
			sendYear()
		} else {
			sendYear()
			sendEmpty()
		}
	}
	return rounds
}

func measureYearPhase(b *testing.B, c *cluster.Cluster, rcv *receiver, proc *cluster.Process, phase, listKey string) phaseFigures {
	var p phaseFigures
	skey := c.Project("year-"+phase+"-sends", "")
	closedLoop(b, proc.URL, skey, warmUpSends, sendClients)
	stopSampling := sampleWaits(c, &p.sendWaits)
	p.sendRate, p.sendP99 = closedLoop(b, proc.URL, skey, sends, sendClients)
	stopSampling()
	waitDrained(b, c, "year-"+phase+"-sends")

	life := "year-" + phase + "-life"
	lkey := c.Project(life, rcv.url+"/"+life)
	var refused int
	p.lifeP99, p.lifeRate, refused = openLoop(b, proc.URL, lkey, rcv, life, yearLifeRate, yearLifeSends)
	if refused > 0 {
		b.Fatalf("%d of %d sends at %.0f/s refused as busy", refused, yearLifeSends, yearLifeRate)
	}
	waitDrained(b, c, life)

	backlog := "year-" + phase + "-backlog"
	bkey := c.Project(backlog, rcv.url+"/"+backlog)
	proc.Stop()
	intake := c.Run("api")
	closedLoop(b, intake.URL, bkey, backlogSends, sendClients)
	intake.Stop()
	p.deliveryRate = drainBacklog(b, c, proc, backlog)
	waitDrained(b, c, backlog)

	if phase == "empty" { // the year's fill gives the project its history; here it has a thousand messages
		closedLoop(b, proc.URL, listKey, 1_000, 8)
		waitDrained(b, c, "year-lists")
	}
	p.lists = measureLists(b, c, proc.URL, listKey)
	return p
}

// measureLists times the list endpoints of the measured project: each list's first page, its
// pages further on through the cursor, and its filters.
func measureLists(b *testing.B, c *cluster.Cluster, base, key string) []listFigure {
	hc := &http.Client{}
	get := func(path string) (map[string]any, time.Duration) {
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		t0 := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		err = json.NewDecoder(resp.Body).Decode(&body)
		took := time.Since(t0)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d %v %v", path, resp.StatusCode, body, err)
		}
		return body, took
	}
	items := func(body map[string]any) []any { v, _ := body["items"].([]any); return v }
	cursorOf := func(body map[string]any) string { v, _ := body["nextCursor"].(string); return v }

	// What to ask for: a conversation and a recipient of the project, from its first page.
	first, _ := get("/v1/conversations?limit=50")
	var conv, to string
	if cs := items(first); len(cs) > 0 {
		conv, _ = cs[len(cs)/2].(map[string]any)["id"].(string)
	}
	msgs, _ := get("/v1/messages?limit=50")
	for _, m := range items(msgs) { // a customer's number: the senders' own receive every day
		if m := m.(map[string]any); m["direction"] == "outbound" && m["channel"] != "email" {
			to, _ = m["to"].(string)
		}
	}
	type list struct {
		name string
		path string
		deep bool // follow the cursor: each request is the next page, from the first again at the end
	}
	lists := []list{
		{name: "messages, first page", path: "/v1/messages?limit=50"},
		{name: "messages, pages on through the cursor", path: "/v1/messages?limit=50", deep: true},
		{name: "messages, status=failed", path: "/v1/messages?limit=50&status=failed"},
		{name: "messages, channel=whatsapp", path: "/v1/messages?limit=50&channel=whatsapp"},
		{name: "v2 messages, first page", path: "/v2/messages?limit=50"},
		{name: "conversations, first page", path: "/v1/conversations?limit=50"},
		{name: "conversations, pages on", path: "/v1/conversations?limit=50", deep: true},
		{name: "contacts, first page", path: "/v1/contacts?limit=50"},
	}
	if conv != "" {
		lists = append(lists, list{name: "a conversation's messages", path: "/v1/conversations/" + conv + "/messages?limit=50"})
	}
	if to != "" {
		lists = append(lists, list{name: "messages, to=one recipient", path: "/v1/messages?limit=50&to=" + url.QueryEscape(to)})
	}
	var out []listFigure
	for _, l := range lists {
		for range 20 { // warm: connections, plans, the pages read
			get(l.path)
		}
		took := make([]time.Duration, 0, yearListRequests)
		cursor := ""
		for range yearListRequests {
			path := l.path
			if l.deep && cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			body, d := get(path)
			took = append(took, d)
			if l.deep {
				cursor = cursorOf(body)
			}
		}
		slices.Sort(took)
		out = append(out, listFigure{name: l.name, p50: took[len(took)/2], p99: took[len(took)*99/100]})
	}
	return out
}

// fillYear COPYs a year of traffic into daily partitions: what the empty phase wrote is dropped
// with the partition that held it (a fresh installation's conversion left one partition for
// everything before its first midnight), each past day is a table filled and then attached
// (its indexes built once, as a long-running installation's would have been filled one row
// at a time), and today onwards are partitions made as the keeper makes them.
func fillYear(b *testing.B, c *cluster.Cluster, n int, f *yearFigures) {
	ctx := context.Background()
	today := time.Now().UTC().Truncate(partition.Day)
	for _, t := range partition.Tables {
		var legacy bool
		if err := c.Pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, t.Name+"_legacy").Scan(&legacy); err != nil {
			b.Fatal(err)
		}
		if legacy {
			if _, err := c.Pool.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s DETACH PARTITION %s_legacy; DROP TABLE %s_legacy`, t.Name, t.Name, t.Name)); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := partition.Ensure(ctx, c.Pool, t, today, today.Add(4*partition.Day)); err != nil {
			b.Fatal(err)
		}
	}
	// The measured project's history is the fill's: what the empty phase made of it goes.
	if _, err := c.Pool.Exec(ctx, `DELETE FROM conversations WHERE project = 'year-lists';
		DELETE FROM contact_channels WHERE project = 'year-lists'; DELETE FROM contacts WHERE project = 'year-lists'`); err != nil {
		b.Fatal(err)
	}
	fillContacts(b, c)

	perDay := n / yearDays
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(2) // the machine's cores: one day generated while another is written
	var messages, deliveries, attempts, keys atomic.Int64
	for d := yearDays; d >= 1; d-- {
		day := today.Add(-time.Duration(d) * partition.Day)
		g.Go(func() error {
			m, dl, a, k, err := fillDay(gctx, c, day, perDay, d <= yearKeyDays)
			messages.Add(m)
			deliveries.Add(dl)
			attempts.Add(a)
			keys.Add(k)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	f.messages, f.deliveries, f.attempts, f.keys = messages.Load(), deliveries.Load(), attempts.Load(), keys.Load()
	// Each conversation kept the days of its messages as they were recorded, since its first,
	// which made it.
	if _, err := c.Pool.Exec(ctx, `UPDATE conversations c SET message_days = d.days, message_days_from = d.first, created_at = d.first
		FROM (SELECT conversation_id, array_agg(DISTINCT (created_at AT TIME ZONE 'UTC')::date) AS days, min(created_at) AS first
		      FROM messages GROUP BY 1) d
		WHERE c.id = d.conversation_id`); err != nil {
		b.Fatal(err)
	}
	// The days on which the senders' addresses received inbound messages, kept as they came in,
	// since the year began.
	if _, err := c.Pool.Exec(ctx, `INSERT INTO inbound_days (project, test_mode, recipient, day)
		SELECT DISTINCT project, test_mode, recipient, (created_at AT TIME ZONE 'UTC')::date FROM messages WHERE direction = 'inbound'
		ON CONFLICT DO NOTHING`); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Pool.Exec(ctx, `UPDATE kept_days SET kept_from = (SELECT min(created_at) FROM messages) WHERE name = 'recipients'`); err != nil {
		b.Fatal(err)
	}
	// A year-old installation's past days were vacuumed and analysed long ago: without this,
	// autovacuum would spend the measured minutes on the fill (and hold off the drop's detaches).
	if _, err := c.Pool.Exec(ctx, `VACUUM (ANALYZE)`); err != nil {
		b.Fatal(err)
	}
	// And its pages were written out long ago: without this, the checkpointer would be flushing
	// the fill's gigabytes during the measured minutes.
	if _, err := c.Pool.Exec(ctx, `CHECKPOINT`); err != nil {
		b.Fatal(err)
	}
	if err := c.Pool.QueryRow(ctx, `SELECT count(*) FROM conversations`).Scan(&f.conversations); err != nil {
		b.Fatal(err)
	}
	for _, t := range append(slices.Collect(func(yield func(string) bool) {
		for _, t := range partition.Tables {
			if !yield(t.Name) {
				return
			}
		}
	}), "conversations", "contacts", "contact_channels") {
		var size int64
		if err := c.Pool.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(oid)), 0)::bigint FROM pg_class
			WHERE oid = $1::regclass OR oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = $1::regclass)`, t).Scan(&size); err != nil {
			b.Fatal(err)
		}
		f.bytes[t] = size
	}
}

// yearProject is the project of the i-th tenant; tenant 0 is the measured one, whose rows are in
// test mode since its key is a test key.
func yearProject(i int) (name string, testMode bool) {
	if i == 0 {
		return "year-lists", true
	}
	return fmt.Sprintf("tenant-%04d", i), false
}

func yearRecipientCount(i int) int {
	if i == 0 {
		return yearListContacts
	}
	return yearRecipients
}

func yearAddress(project, r int) string { return fmt.Sprintf("+1555%03d%04d", project%1000, r) }

func yearConversation(project, r int) string { return fmt.Sprintf("conv_year%04d%015d", project, r) }

// fillContacts makes every tenant's contacts, their channels and their conversations, all a year
// old; the messages refer to the conversations.
func fillContacts(b *testing.B, c *cluster.Cluster) {
	ctx := context.Background()
	yearAgo := time.Now().UTC().Add(-yearDays * partition.Day)
	// The last message of each conversation: within the last day, spread.
	if _, err := c.Pool.Exec(ctx, `
		WITH people AS (
			SELECT p, r,
			       CASE WHEN p = 0 THEN 'year-lists' ELSE 'tenant-' || lpad(p::text, 4, '0') END AS project,
			       p = 0 AS test_mode,
			       '+1555' || lpad((p % 1000)::text, 3, '0') || lpad(r::text, 4, '0') AS address,
			       'ct_year' || lpad(p::text, 4, '0') || lpad(r::text, 13, '0') AS contact_id,
			       'conv_year' || lpad(p::text, 4, '0') || lpad(r::text, 15, '0') AS conversation_id,
			       $1::timestamptz + (p * 1000 + r) * interval '1 second' AS created_at
			FROM generate_series(0, $2::int - 1) AS p,
			     LATERAL generate_series(0, CASE WHEN p = 0 THEN $3::int ELSE $4::int END - 1) AS r
		), c AS (
			INSERT INTO contacts (id, project, test_mode, display_name, metadata, created_at, updated_at)
			SELECT contact_id, project, test_mode, 'Customer ' || r, '{"tier":"standard"}', created_at, created_at FROM people
		), ch AS (
			INSERT INTO contact_channels (id, contact_id, project, test_mode, channel, identifier, is_primary, country_code, created_at, updated_at)
			SELECT 'cch_year' || lpad(p::text, 4, '0') || lpad(r::text, 12, '0'), contact_id, project, test_mode, 'sms', address, true, 'US', created_at, created_at FROM people
		)
		INSERT INTO conversations (id, project, test_mode, sender, contact_identifier, address, contact_id, channels, message_count,
		                           last_message_id, last_message_at, last_message_channel, last_message_direction, last_message_text,
		                           created_at, updated_at)
		SELECT conversation_id, project, test_mode, 'main', address, address, contact_id, ARRAY['sms'], 40,
		       'msg_unknown', now() - (p * 1000 + r) % 86400 * interval '1 second', 'sms', 'outbound', 'Your order has shipped', created_at, created_at
		FROM people`, yearAgo, yearProjects, yearListContacts, yearRecipients); err != nil {
		b.Fatal(err)
	}
}

// dayMessage is a message of the fill, with what its deliveries need.
type dayMessage struct {
	id, project, recipient, conversation, channel, status, direction string
	testMode                                                         bool
	at                                                               time.Time
}

// fillDay fills one day of every partitioned table: the day's messages in time order, three
// deliveries of each with one attempt, and (within the keys' retention) an idempotency key for
// a fifth of them.
func fillDay(ctx context.Context, c *cluster.Cluster, day time.Time, count int, withKeys bool) (m, d, a, k int64, err error) {
	r := rand.New(rand.NewPCG(uint64(day.Unix()), 7))
	msgs := make([]dayMessage, count)
	span := partition.Day - 10*time.Second // a delivery 4 s after its message stays in the day
	for i := range msgs {
		at := day.Add(time.Duration(int64(span) * int64(i) / int64(count)))
		p := 1 + r.IntN(yearProjects-1)
		if r.Float64() < yearListShare {
			p = 0
		}
		project, testMode := yearProject(p)
		rec := r.IntN(yearRecipientCount(p))
		id, err := randid.Timed("msg_", at)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		dm := dayMessage{id: id, project: project, testMode: testMode, at: at, recipient: yearAddress(p, rec),
			conversation: yearConversation(p, rec), channel: "sms", status: "delivered", direction: "outbound"}
		switch x := r.Float64(); {
		case x < 0.2:
			dm.channel = "whatsapp"
		case x < 0.25:
			dm.channel = "email"
			dm.recipient = fmt.Sprintf("customer%d@tenant%d.example", rec, p)
		}
		switch x := r.Float64(); {
		case x < 0.1:
			dm.direction, dm.status = "inbound", "received"
		case x < 0.13:
			dm.status = "failed"
		}
		msgs[i] = dm
	}

	conn, err := c.Pool.Acquire(ctx)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer conn.Release()
	fill := func(table string, columns []string, rows pgx.CopyFromSource) (int64, error) {
		name := table + "_p" + day.Format("20060102")
		if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)`, name, table)); err != nil {
			return 0, err
		}
		copied, err := conn.CopyFrom(ctx, pgx.Identifier{name}, columns, rows)
		if err != nil {
			return 0, fmt.Errorf("copy into %s: %w", name, err)
		}
		if _, err := conn.Exec(ctx, `SET maintenance_work_mem = '256MB'`); err != nil {
			return 0, err
		}
		_, err = conn.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s')`,
			table, name, day.Format(time.RFC3339), day.Add(partition.Day).Format(time.RFC3339)))
		return copied, err
	}

	i := -1
	if m, err = fill("messages", []string{"id", "project", "test_mode", "sender", "direction", "channel", "message_type", "status",
		"recipient", "originator", "body", "metadata", "provider_message_id", "error_code", "error_message", "created_at", "updated_at",
		"conversation_id", "cost_micros", "charged_micros", "provider"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i++; i >= len(msgs) {
				return nil, nil
			}
			dm := msgs[i]
			var meta any
			if i%3 == 0 {
				meta = map[string]any{"orderId": fmt.Sprintf("A-%07d", i)}
			}
			var code, text any
			if dm.status == "failed" {
				code, text = "DELIVERY_FAILED", "Unreachable destination handset"
			}
			body := fmt.Sprintf("Your order A-%07d has shipped and will arrive on Tuesday. Track it at https://t.example/%d. Reply STOP to opt out.", i, i)
			recipient, originator := dm.recipient, "+15005550006"
			if dm.direction == "inbound" { // from the customer, to the sender's number
				recipient, originator = originator, recipient
			}
			return []any{dm.id, dm.project, dm.testMode, "main", dm.direction, dm.channel, "text", dm.status,
				recipient, originator, body, meta, fmt.Sprintf("SM%032x", r.Uint64()), code, text, dm.at, dm.at.Add(4 * time.Second),
				dm.conversation, int64(7500), int64(7900), "twilio"}, nil
		})); err != nil {
		return
	}

	events := []string{"message.queued", "message.sent", "message.delivered"}
	offsets := []time.Duration{50 * time.Millisecond, time.Second, 4 * time.Second}
	deliveryIDs := make([]string, 0, len(msgs)*yearDeliveries)
	deliveryAt := make([]time.Time, 0, len(msgs)*yearDeliveries)
	j := -1
	if d, err = fill("webhook_deliveries", []string{"id", "project", "event", "endpoint_kind", "endpoint_name", "data",
		"address_from", "address_to", "transport", "status", "attempts", "created_at", "finished_at", "mode"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if j++; j >= len(msgs)*yearDeliveries {
				return nil, nil
			}
			dm, e := msgs[j/yearDeliveries], j%yearDeliveries
			at := dm.at.Add(offsets[e])
			id, err := randid.Timed("evt_", at)
			if err != nil {
				return nil, err
			}
			deliveryIDs, deliveryAt = append(deliveryIDs, id), append(deliveryAt, at)
			status := []string{"queued", "sent", dm.status}[e]
			data := fmt.Sprintf(`{"id":%q,"type":%q,"timestamp":%d,"data":{"messageId":%q,"to":%q,"from":"+15005550006","channel":%q,"status":%q,"messageType":"text","direction":"outbound","senderId":"main"}}`,
				id, events[e], at.UnixMilli(), dm.id, dm.recipient, dm.channel, status)
			mode := "live"
			if dm.testMode {
				mode = "test"
			}
			return []any{id, dm.project, events[e], "sender", "main", data, "+15005550006", dm.recipient, dm.channel,
				"delivered", int32(1), at, at.Add(80 * time.Millisecond), mode}, nil
		})); err != nil {
		return
	}

	h := -1
	if a, err = fill("webhook_delivery_attempts", []string{"delivery_id", "attempt", "started_at", "url", "status_code", "latency_ms", "response_body"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if h++; h >= len(deliveryIDs) {
				return nil, nil
			}
			dm := msgs[h/yearDeliveries]
			return []any{deliveryIDs[h], int32(1), deliveryAt[h].Add(10 * time.Millisecond),
				"https://hooks." + dm.project + ".example/switchboard", int32(200), int32(40 + r.IntN(160)), ""}, nil
		})); err != nil {
		return
	}

	if !withKeys {
		return m, d, a, 0, nil
	}
	g := -1
	k, err = fill("message_idempotency_keys", []string{"project", "test_mode", "key", "message_id", "created_at"},
		pgx.CopyFromFunc(func() ([]any, error) {
			for {
				if g++; g >= len(msgs) {
					return nil, nil
				}
				if float64(g%100) < yearKeyShare*100 {
					dm := msgs[g]
					return []any{dm.project, dm.testMode, "order-" + dm.id, dm.id, dm.at}, nil
				}
			}
		}))
	return m, d, a, k, err
}

// dropAMonth drops the oldest month of every partitioned table while clients send, as a
// retention setting a month shorter would, and compares the sends' latency with the seconds
// before.
func dropAMonth(b *testing.B, c *cluster.Cluster, proc *cluster.Process) dropFigures {
	ctx := context.Background()
	var f dropFigures
	key := c.Project("year-drop-sends", "")
	closedLoop(b, proc.URL, key, warmUpSends, yearDropClients)

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: yearDropClients * 2}}
	type sample struct {
		at   time.Time
		took time.Duration
	}
	var (
		mu       sync.Mutex
		samples  []sample
		failures atomic.Int64
		stop     atomic.Bool
		wg       sync.WaitGroup
		seq      atomic.Int64
	)
	for range yearDropClients {
		wg.Go(func() {
			for !stop.Load() {
				i := seq.Add(1)
				t0 := time.Now()
				if _, _, err := cluster.Send(hc, proc.URL, key, fmt.Sprintf(`{"to":"+1500558%04d","text":"Drop %d"}`, i%10000, i)); err != nil {
					failures.Add(1)
				}
				mu.Lock()
				samples = append(samples, sample{at: t0, took: time.Since(t0)})
				mu.Unlock()
			}
		})
	}
	time.Sleep(10 * time.Second) // the sends' latency before the drop
	dropBegan := time.Now()
	horizon := time.Now().UTC().Truncate(partition.Day).Add(-(yearDays - yearDropDays) * partition.Day)
	for _, t := range partition.Tables {
		t0 := time.Now()
		dropped, err := partition.DropBefore(ctx, c.Pool, t, horizon)
		if err != nil {
			stop.Store(true)
			wg.Wait()
			b.Fatalf("drop the oldest month of %s: %v", t.Name, err)
		}
		f.tables = append(f.tables, fmt.Sprintf("%s (%d)", t.Name, len(dropped)))
		f.took = append(f.took, time.Since(t0))
		f.partitions += len(dropped)
	}
	dropEnded := time.Now()
	if want := 3 * yearDropDays; f.partitions != want { // the keys hold a week only
		stop.Store(true)
		wg.Wait()
		b.Fatalf("dropped %d partitions (%s), want %d", f.partitions, strings.Join(f.tables, ", "), want)
	}
	time.Sleep(2 * time.Second)
	stop.Store(true)
	wg.Wait()
	if failures.Load() > 0 {
		b.Fatalf("%d sends failed around the drop", failures.Load())
	}
	var before, during []time.Duration
	for _, s := range samples {
		switch {
		case s.at.Before(dropBegan):
			before = append(before, s.took)
		case s.at.Before(dropEnded):
			during = append(during, s.took)
		}
	}
	if len(before) == 0 || len(during) == 0 {
		b.Fatalf("%d sends before the drop and %d during it: nothing to compare", len(before), len(during))
	}
	slices.Sort(before)
	slices.Sort(during)
	f.sendP99Before, f.sendMaxBefore = before[len(before)*99/100], before[len(before)-1]
	f.sendP99During, f.sendMaxDuring = during[len(during)*99/100], during[len(during)-1]
	f.sendRateBefore = float64(len(before)) / dropBegan.Sub(samples[0].at).Seconds()
	f.sendRateDuring = float64(len(during)) / dropEnded.Sub(dropBegan).Seconds()
	f.sendsDuringDrop = len(during)
	return f
}

func (f *yearFigures) table() string {
	var s strings.Builder
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	gb := func(n int64) string { return fmt.Sprintf("%.2f GB", float64(n)/1e9) }
	var total int64
	for _, v := range f.bytes {
		total += v
	}
	fmt.Fprintf(&s, "A simulated year (one `all` process): %d messages, %d webhook deliveries, %d attempts, %d idempotency keys (last %d days), %d conversations, across %d projects in %d daily partitions a table; COPYed in %v; %s on disk with indexes\n",
		f.messages, f.deliveries, f.attempts, f.keys, yearKeyDays, f.conversations, yearProjects, yearDays, f.fillTook.Round(time.Second), gb(total))
	for _, t := range slices.Sorted(func(yield func(string) bool) {
		for k := range f.bytes {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&s, "    %-27s %s\n", t, gb(f.bytes[t]))
	}
	fmt.Fprintf(&s, "\n| | empty database | a year of data | year / empty | target |\n|---|---|---|---|---|\n")
	e, y := f.empty, f.year
	rate := y.sendRate / e.sendRate
	fmt.Fprintf(&s, "| accepted sends/s (32 clients) | %.0f | %.0f | %.2f | ≥ 0.90: %s |\n", e.sendRate, y.sendRate, rate, met(rate >= 0.9))
	p99 := float64(y.sendP99) / float64(e.sendP99)
	fmt.Fprintf(&s, "| accept p99 | %s | %s | %.2f | ≤ 1.10: %s |\n", ms(e.sendP99), ms(y.sendP99), p99, met(p99 <= 1.1))
	fmt.Fprintf(&s, "| send → message.delivered p99 at %.0f/s (status path, webhook delivery) | %s | %s | %.2f | |\n",
		yearLifeRate, ms(e.lifeP99), ms(y.lifeP99), float64(y.lifeP99)/float64(e.lifeP99))
	fmt.Fprintf(&s, "| webhook backlog drained, deliveries/s | %.0f | %.0f | %.2f | |\n", e.deliveryRate, y.deliveryRate, y.deliveryRate/e.deliveryRate)
	for i, l := range y.lists {
		var el listFigure
		if i < len(e.lists) {
			el = e.lists[i]
		}
		fmt.Fprintf(&s, "| list p99 (p50): %s | %s (%s) | %s (%s) | | ≤ 20 ms: %s |\n", l.name, ms(el.p99), ms(el.p50), ms(l.p99), ms(l.p50),
			met(l.p99 <= 20*time.Millisecond))
	}
	if len(f.paired) > 0 {
		fmt.Fprintf(&s, "\nAcceptance in turns with an empty installation (%d rounds of %d sends each, 32 clients, alternating which goes first):\n\n| round | empty sends/s | year sends/s | year / empty | empty p99 | year p99 | year / empty |\n|---|---|---|---|---|---|---|\n",
			len(f.paired), pairedSends)
		var rates, p99s []float64
		for i, r := range f.paired {
			rate, p99 := r.yearRate/r.emptyRate, float64(r.yearP99)/float64(r.emptyP99)
			rates, p99s = append(rates, rate), append(p99s, p99)
			fmt.Fprintf(&s, "| %d | %.0f | %.0f | %.2f | %s | %s | %.2f |\n", i+1, r.emptyRate, r.yearRate, rate, ms(r.emptyP99), ms(r.yearP99), p99)
		}
		mr, mp := median(rates), median(p99s)
		fmt.Fprintf(&s, "| median | | | %.2f (≥ 0.90: %s) | | | %.2f (≤ 1.10: %s) |\n", mr, met(mr >= 0.9), mp, met(mp <= 1.1))
	}
	d := f.drop
	var took []string
	var all time.Duration
	for i, t := range f.drop.tables {
		took = append(took, fmt.Sprintf("%s %v", t, d.took[i].Round(time.Millisecond)))
		all += d.took[i]
	}
	fmt.Fprintf(&s, "\nWhat the database's active backends waited on while sends were accepted (sampled every 5 ms; CPU: none):\n    empty: %s\n    year:  %s\n",
		topWaits(e.sendWaits), topWaits(y.sendWaits))
	fmt.Fprintf(&s, "\nThe oldest %d days dropped while %d clients sent: %d partitions in %v (%s); it must take seconds: %s\n",
		yearDropDays, yearDropClients, d.partitions, all.Round(time.Millisecond), strings.Join(took, ", "), met(all < time.Minute))
	fmt.Fprintf(&s, "    sends before: %.0f/s, p99 %s, slowest %s; during: %.0f/s, p99 %s, slowest %s (%d sends); none failed\n",
		d.sendRateBefore, ms(d.sendP99Before), ms(d.sendMaxBefore), d.sendRateDuring, ms(d.sendP99During), ms(d.sendMaxDuring), d.sendsDuringDrop)
	return s.String()
}

// median is the middle of vs (the mean of the two middle ones for an even count).
func median(vs []float64) float64 {
	vs = slices.Sorted(slices.Values(vs))
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}
