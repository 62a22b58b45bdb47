// Package chaos checks Switchboard's promises (docs/guarantees.md) against the built binary run as
// production runs it: two api and two worker processes and a manager on one Postgres and Redis,
// under a load of test and live sends, while kill -9 hits a random api or worker every few
// seconds, Postgres restarts once and the webhook receiver is down for a while. `make chaos` runs
// the full length; `make test` runs a shorter one.
package chaos

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
	"github.com/switchboard-io/switchboard/test/cluster"
)

func TestMain(m *testing.M) {
	code := m.Run()
	cluster.RemoveBinary()
	os.Exit(code)
}

// plan is one run's shape. Times count from the start of the load.
type plan struct {
	load          time.Duration // sends are made during this
	rate          float64       // sends a second, a third of them live
	killEvery     time.Duration // a random api or worker is killed this often during the load
	minKills      int
	receiverDown  time.Duration // the receiver refuses connections from receiverAt for this long
	receiverAt    time.Duration
	postgresAt    time.Duration // Postgres restarts once, here
	outageAt      time.Duration // the first Twilio account refuses connections from here
	outageFor     time.Duration // for this long: its messages go through the second
	drainDeadline time.Duration // after the load, everything must be final and delivered within this
}

// The full run (make chaos) and the short one make test runs. The drain deadline covers a
// delivery's lease (1 min) after a kill plus the first retry (+1 min) after the receiver's outage.
var (
	full = plan{load: 100 * time.Second, rate: 60, killEvery: 3 * time.Second, minKills: 20,
		receiverAt: 15 * time.Second, receiverDown: time.Minute, postgresAt: 50 * time.Second,
		outageAt: 30 * time.Second, outageFor: time.Minute, drainDeadline: 8 * time.Minute}
	short = plan{load: 30 * time.Second, rate: 30, killEvery: 3 * time.Second, minKills: 8,
		receiverAt: 5 * time.Second, receiverDown: 15 * time.Second, postgresAt: 20 * time.Second,
		outageAt: 8 * time.Second, outageFor: 15 * time.Second, drainDeadline: 5 * time.Minute}
)

const project = "chaos"

// TestChaos: nothing accepted is lost, nothing is sent to the provider twice outside the
// documented window, every event arrives at least once under one id, no delivery is stuck; the
// sender's two SMS Providers carry its messages through an outage of the first, and no message
// reaches both.
func TestChaos(t *testing.T) {
	p := short
	if os.Getenv("SWITCHBOARD_CHAOS") == "full" {
		p = full
	}
	rcv := newReceiver(t)
	twilio, backup := twiliotest.NewServer(t), twiliotest.NewServer(t)
	c := cluster.Start(t, cluster.Options{OwnPostgres: true, Redis: true, TrustPEM: rcv.pem})
	lb := cluster.NewBalancer(t)

	// The processes: callbacks and clients reach the api processes through the balancer.
	public := []string{"--public-url", lb.URL}
	c.Run("manager")
	var victims []*cluster.Process
	for range 2 {
		api := c.Run("api", public...)
		lb.Add(api)
		victims = append(victims, api)
	}
	// Messages whose status callback a kill cut are asked of Twilio 20 s after sent.
	workerArgs := append(slices.Clone(public), "--reconcile-sent-after", "20s", "--reconcile-every", "2s")
	for range 2 {
		victims = append(victims, c.Run("worker", workerArgs...))
	}
	testKey, liveKey := setUp(t, c, twilio.URL, backup.URL, rcv.url)

	// The chaos, on a clock shared with the load.
	var kills atomic.Int64
	var killLog sync.Mutex
	var killedAt []time.Time // kills of workers and the Postgres restart: what can explain a provider duplicate
	stop := make(chan struct{})
	var chaos sync.WaitGroup
	var outageFrom, outageTo time.Time
	chaos.Add(4)
	go func() { // kill -9 of a random api or worker, restarted at once as Kubernetes would
		defer chaos.Done()
		tick := time.NewTicker(p.killEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			v := victims[rand.IntN(len(victims))]
			v.Kill()
			kills.Add(1)
			if v.Role == "worker" { // only a worker calls the provider
				killLog.Lock()
				killedAt = append(killedAt, time.Now())
				killLog.Unlock()
			}
			// A process that exits while starting (Postgres restarting under it) is started
			// again after a pause, as Kubernetes restarts a crashed container with a backoff.
			err := v.Restart()
			for try := 1; err != nil && try < 5; try++ {
				time.Sleep(time.Duration(try) * time.Second)
				err = v.Restart()
			}
			if err != nil {
				t.Errorf("restart %s after kill: %v", v.Role, err)
				return
			}
		}
	}()
	go func() { // the receiver's outage
		defer chaos.Done()
		time.Sleep(p.receiverAt)
		rcv.down()
		time.Sleep(p.receiverDown)
		rcv.up(t)
	}()
	go func() { // the first Twilio account's outage: connections refused
		defer chaos.Done()
		time.Sleep(p.outageAt)
		outageFrom = time.Now()
		twilio.Down()
		time.Sleep(p.outageFor)
		twilio.Up()
		outageTo = time.Now()
	}()
	go func() { // one Postgres restart
		defer chaos.Done()
		time.Sleep(p.postgresAt)
		killLog.Lock()
		killedAt = append(killedAt, time.Now())
		killLog.Unlock()
		if err := c.RestartPostgresErr(); err != nil {
			t.Errorf("restart Postgres: %v", err)
		}
	}()

	l := runLoad(lb.URL, testKey, liveKey, p)
	close(stop)
	chaos.Wait()
	loadEnded := time.Now()
	if t.Failed() {
		return
	}

	// Drained: every message final (or sent with its provider's callback lost, see below), no
	// delivery pending.
	var st state
	for {
		st = readState(t, c, twilio, backup)
		if st.open == 0 && st.pendingDeliveries == 0 && st.callbackLost == 0 {
			break
		}
		if time.Since(loadEnded) > p.drainDeadline {
			break
		}
		time.Sleep(time.Second)
	}
	drained := time.Since(loadEnded)

	// The figures.
	accepted := l.accepted()
	var lost []string
	for _, id := range accepted {
		if _, ok := st.messages[id]; !ok {
			lost = append(lost, id)
		}
	}
	killLog.Lock()
	dups, unexplained := providerDuplicates(append(twilio.Messages(), backup.Messages()...), killedAt)
	killLog.Unlock()
	both := reachedBoth(twilio.Messages(), backup.Messages())
	duringOutage, firstDuringOutage := 0, 0
	for _, m := range backup.Messages() {
		if !m.Received.Before(outageFrom) && !m.Received.After(outageTo) {
			duringOutage++
		}
	}
	for _, m := range twilio.Messages() {
		if !m.Received.Before(outageFrom) && !m.Received.After(outageTo) {
			firstDuringOutage++
		}
	}
	events, maxRedeliveries, missing, doubled := rcv.check(st)
	t.Logf(`chaos (%s load at %.0f sends/s, kill -9 every %v, receiver down %v, one Postgres restart):
  processes killed:                 %d
  sends answered / unanswered:      %d / %d  (answered: 200, or 409 with the original message on a retry)
  messages stored:                  %d  (test %d, live %d)
  accepted but lost:                %d
  final after the load:             %d of %d within %v
  not final (stuck):                %d
  live left sent, callback lost:    %d  (the provider's status callback was cut by a kill or refused during the Postgres restart, and Twilio's Message resource was not asked yet)
  provider duplicates:              %d  (unexplained by a crash: %d)
  first account down:               %v  (messages it took then: %d; the second took %d)
  failed over in one dispatch:      %d  (went through the second after the first refused)
  through the first / the second:   %d / %d
  reached both accounts:            %d
  events delivered:                 %d  (deliveries stored %d; pending %d, failed %d)
  events missing / with two ids:    %d / %d
  most arrivals of one event id:    %d`,
		p.load, p.rate, p.killEvery, p.receiverDown,
		kills.Load(), len(accepted), l.unanswered.Load(), len(st.messages), st.test, st.live, len(lost),
		len(st.messages)-st.open-st.callbackLost, len(st.messages), drained.Round(time.Second), st.open, st.callbackLost,
		dups, unexplained, outageTo.Sub(outageFrom).Round(time.Second), firstDuringOutage, duringOutage, st.failedOver,
		len(twilio.Messages()), len(backup.Messages()), len(both), events, st.deliveries, st.pendingDeliveries, st.failedDeliveries, len(missing), len(doubled), maxRedeliveries)

	if int(kills.Load()) < p.minKills {
		t.Errorf("only %d kills, want at least %d", kills.Load(), p.minKills)
	}
	if len(lost) > 0 {
		t.Errorf("%d accepted messages are not stored: %v", len(lost), first(lost))
	}
	if st.open > 0 {
		t.Errorf("%d messages not final %v after the load: %v", st.open, p.drainDeadline, first(st.stuck))
	}
	if st.callbackLost > 0 {
		t.Errorf("%d live messages left sent %v after the load: their lost callbacks were not reconciled", st.callbackLost, p.drainDeadline)
	}
	if unexplained > 0 {
		t.Errorf("%d messages reached the provider twice without a crash between", unexplained)
	}
	if len(both) > 0 {
		t.Errorf("%d messages reached both Twilio accounts: %v", len(both), first(both))
	}
	if firstDuringOutage > 0 || duringOutage == 0 || st.failedOver == 0 {
		t.Errorf("during the first account's outage it took %d messages and the second %d; %d failed over, want 0, some, some",
			firstDuringOutage, duringOutage, st.failedOver)
	}
	if st.pendingDeliveries > 0 || st.failedDeliveries > 0 {
		t.Errorf("deliveries not delivered: %d pending, %d failed", st.pendingDeliveries, st.failedDeliveries)
	}
	if len(missing) > 0 {
		t.Errorf("%d events never reached the receiver: %v", len(missing), first(missing))
	}
	if len(doubled) > 0 {
		t.Errorf("%d (message, event) pairs arrived under more than one event id: %v", len(doubled), first(doubled))
	}
	if len(accepted) == 0 || l.unanswered.Load() > int64(len(accepted))/100 {
		t.Errorf("%d sends never answered of %d", l.unanswered.Load(), len(accepted))
	}

	// Two api replicas share one request-rate window through Redis.
	checkSharedRateLimit(t, c, victims[:2])
}

func first(s []string) []string {
	if len(s) > 10 {
		return s[:10]
	}
	return s
}

// setUp makes the project: a Twilio account (the loopback peer) as its Provider, a sender on it
// whose webhook receives every event, and a test and a live key.
func setUp(t *testing.T, c *cluster.Cluster, twilioURL, backupURL, rcvURL string) (testKey, liveKey string) {
	ctx := context.Background()
	// The sends must not meet the request-rate limit nor the SMS ceiling (an agreed one).
	limit, sms := int32(1_000_000), int64(1_000_000_000)
	snd := &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "main"}, Spec: v1alpha1.SenderSpec{
		DisplayName: "Main", Default: true, Transport: v1alpha1.TransportProviders, PhoneNumber: "+15005550007",
		SMS: &v1alpha1.Activation{Active: true}, Webhook: &v1alpha1.SenderWebhook{URL: rcvURL + "/hook"},
		Routes: []v1alpha1.ChannelRoute{{Channel: v1alpha1.ChannelSMS, Strategy: v1alpha1.StrategyFailover,
			Providers: []v1alpha1.RouteProvider{{Name: "twilio"}, {Name: "twilio-backup"}}}}}}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: project}},
		&v1alpha1.Project{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "project"},
			Spec: v1alpha1.ProjectSpec{DisplayName: project, RequestRateLimit: &limit, Verification: v1alpha1.VerificationBusinessApproved,
				DailyLimits: &v1alpha1.DailyLimits{SMS: &sms}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "twilio", Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
			StringData: map[string]string{"accountSid": twiliotest.AccountSID, "authToken": twiliotest.AuthToken}},
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "twilio"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderTwilio, BaseURL: twilioURL, Default: true, SecretRef: &v1alpha1.ProviderSecretRef{Name: "twilio"}}},
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "twilio-backup"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderTwilio, BaseURL: backupURL, SecretRef: &v1alpha1.ProviderSecretRef{Name: "twilio"}}},
		snd,
	} {
		if err := c.K8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	keys := apikey.NewService(c.Pool)
	var err error
	if testKey, _, err = keys.Create(ctx, project, "chaos-test", apikey.Test, nil); err != nil {
		t.Fatal(err)
	}
	if liveKey, _, err = keys.Create(ctx, project, "chaos-live", apikey.Live, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var pr v1alpha1.Provider
		var s v1alpha1.Sender
		if c.K8s.Get(ctx, client.ObjectKey{Namespace: project, Name: "twilio"}, &pr) == nil && pr.IsReady() &&
			c.K8s.Get(ctx, client.ObjectKeyFromObject(snd), &s) == nil && s.IsReady() && s.Status.WebhookSecret != nil {
			return testKey, liveKey
		}
		if time.Now().After(deadline) {
			t.Fatal("the Provider and the Sender are not Ready within 2 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// load is what the clients saw.
type load struct {
	mu         sync.Mutex
	ids        []string
	unanswered atomic.Int64
}

func (l *load) accepted() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ids)
}

// runLoad sends at p.rate for p.load, a third with the live key, each with an idempotency key
// and retried with it (as docs/guarantees.md tells clients) while the answer does not come.
func runLoad(url, testKey, liveKey string, p plan) *load {
	l := &load{}
	hc := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	n := int(p.load.Seconds() * p.rate)
	interval := time.Duration(float64(time.Second) / p.rate)
	began := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		if d := time.Until(began.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		key := testKey
		if i%3 == 2 {
			key = liveKey
		}
		body := fmt.Sprintf(`{"to":"+4477009%05d","text":"Chaos %d","idempotencyKey":"chaos-%d"}`, i%100000, i, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for try := 0; try < 30; try++ {
				if _, id, err := cluster.Send(hc, url, key, body); err == nil {
					l.mu.Lock()
					l.ids = append(l.ids, id)
					l.mu.Unlock()
					return
				}
				time.Sleep(time.Duration(500+rand.IntN(500)) * time.Millisecond)
			}
			l.unanswered.Add(1)
		}()
	}
	wg.Wait()
	return l
}

// state is the database's view after the run.
type state struct {
	messages          map[string]message
	test, live        int
	open              int      // not final
	stuck             []string // a few of them, for the failure message
	callbackLost      int      // live messages left sent because their provider's callback never got through
	failedOver        int      // live messages that went through the second account after the first refused
	deliveries        int
	pendingDeliveries int
	failedDeliveries  int
	deliveryIDs       map[string]bool // every stored delivery (event) id
}

type message struct {
	status   string
	testMode bool
}

func readState(t *testing.T, c *cluster.Cluster, peers ...*twiliotest.Server) state {
	ctx := context.Background()
	// The provider ids whose status callback a peer could not hand over (a kill cut it, or the
	// api answered 5xx while Postgres restarted): Twilio does not retry those.
	lostCallback := map[string]bool{}
	var callbacks []twiliotest.Callback
	for _, p := range peers {
		callbacks = append(callbacks, p.Callbacks()...)
	}
	for _, cb := range callbacks {
		if cb.Err != nil || cb.Status < 200 || cb.Status > 299 {
			for _, sid := range cb.Params["MessageSid"] {
				lostCallback[sid] = true
			}
		}
	}
	st := state{messages: map[string]message{}, deliveryIDs: map[string]bool{}}
	rows, err := c.Pool.Query(ctx, `SELECT id, status, test_mode, coalesce(provider_message_id, ''), cardinality(attempted_providers) > 1
		FROM messages WHERE project = $1`, project)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, status, sid string
		var testMode, failedOver bool
		if err := rows.Scan(&id, &status, &testMode, &sid, &failedOver); err != nil {
			t.Fatal(err)
		}
		if failedOver {
			st.failedOver++
		}
		st.messages[id] = message{status: status, testMode: testMode}
		if testMode {
			st.test++
		} else {
			st.live++
		}
		switch {
		case status == "delivered" || status == "read" || status == "failed":
		case status == "sent" && !testMode && lostCallback[sid]:
			st.callbackLost++
		default:
			st.open++
			if len(st.stuck) < 10 {
				st.stuck = append(st.stuck, id+" "+status)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows, err = c.Pool.Query(ctx, `SELECT id, status FROM webhook_deliveries WHERE project = $1`, project)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, status string
		if err := rows.Scan(&id, &status); err != nil {
			t.Fatal(err)
		}
		st.deliveries++
		st.deliveryIDs[id] = true
		switch status {
		case "pending":
			st.pendingDeliveries++
		case "failed", "cancelled":
			st.failedDeliveries++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return st
}

// reachedBoth are the messages (by their text) that both accounts received.
func reachedBoth(a, b []twiliotest.Message) []string {
	inA := map[string]bool{}
	for _, m := range a {
		inA[m.Body] = true
	}
	var both []string
	for _, m := range b {
		if inA[m.Body] && !slices.Contains(both, m.Body) {
			both = append(both, m.Body)
		}
	}
	return both
}

// providerDuplicates counts the messages the provider received more than once, and those of them
// with no worker kill or Postgres restart between two receipts: the duplicate window of
// docs/guarantees.md is a crash between the provider's answer and the commit of sent.
func providerDuplicates(received []twiliotest.Message, crashes []time.Time) (dups, unexplained int) {
	byBody := map[string][]time.Time{}
	for _, m := range received {
		byBody[m.Body] = append(byBody[m.Body], m.Received)
	}
	for _, at := range byBody {
		if len(at) < 2 {
			continue
		}
		dups++
		slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
		for i := 1; i < len(at); i++ {
			if !slices.ContainsFunc(crashes, func(c time.Time) bool { return !c.Before(at[i-1]) && !c.After(at[i]) }) {
				unexplained++
				break
			}
		}
	}
	return dups, unexplained
}

// checkSharedRateLimit: a project on the default limit (600 requests a minute) gets 600 answers
// in a minute and 429 for the rest, however its requests are spread over the two api replicas.
func checkSharedRateLimit(t *testing.T, c *cluster.Cluster, apis []*cluster.Process) {
	ctx := context.Background()
	const name, limit, requests = "ratelimit", 600, 700
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&v1alpha1.Project{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "project"}, Spec: v1alpha1.ProjectSpec{DisplayName: name}},
	} {
		if err := c.K8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	key, _, err := apikey.NewService(c.Pool).Create(ctx, name, "rate", apikey.Test, nil)
	if err != nil {
		t.Fatal(err)
	}
	ok, limited := 0, 0
	count := func(resp *http.Response) {
		switch resp.StatusCode {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			limited++
		}
	}
	// Both replicas know the project before the count starts (these requests count too).
	deadline := time.Now().Add(time.Minute)
	for _, api := range apis {
		for {
			resp, err := getMessages(api.URL, key)
			if err == nil {
				count(resp)
				if resp.StatusCode == http.StatusOK && resp.Header.Get("X-RateLimit-Limit") == fmt.Sprint(limit) {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not serve project %s", api.URL, name)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for i := range requests - ok - limited {
		resp, err := getMessages(apis[i%2].URL, key)
		if err != nil {
			t.Fatal(err)
		}
		count(resp)
	}
	if ok != limit || ok+limited != requests {
		t.Errorf("over two replicas: %d answered, %d limited; want %d answered in the shared window, %d limited", ok, limited, limit, requests-limit)
	}
	t.Logf("request-rate limit shared by two api replicas: %d answered, %d refused with 429 (limit %d a minute)", ok, limited, limit)
}

func getMessages(url, key string) (*http.Response, error) {
	req, _ := http.NewRequest(http.MethodGet, url+"/v1/messages", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, nil
}

// receiver is a loopback HTTPS webhook receiver that can go down (its port refuses connections)
// and come back on the same address. It answers 204 and records every arrival.
type receiver struct {
	url  string
	pem  []byte
	addr string
	cfg  *tls.Config

	mu       sync.Mutex
	srv      *http.Server
	arrivals map[string]int             // event id → arrivals
	ids      map[string]map[string]bool // message id + " " + event → event ids
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{arrivals: map[string]int{}, ids: map[string]map[string]bool{}}
	// httptest's certificate (for 127.0.0.1) on a server of our own, which can stop and start.
	ts := httptest.NewUnstartedServer(http.NotFoundHandler())
	ts.StartTLS()
	r.cfg = &tls.Config{Certificates: ts.TLS.Certificates, MinVersion: tls.VersionTLS12}
	r.pem = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	r.addr = ts.Listener.Addr().String()
	ts.Close()
	r.url = "https://" + r.addr
	r.up(t)
	t.Cleanup(r.down)
	return r
}

func (r *receiver) up(t *testing.T) {
	var l net.Listener
	var err error
	for range 50 { // the port may linger a moment after the close
		if l, err = net.Listen("tcp", r.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Errorf("receiver back up: %v", err)
		return
	}
	srv := &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
	go func() { _ = srv.Serve(tls.NewListener(l, r.cfg)) }()
}

func (r *receiver) down() {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	var ev struct {
		ID    string `json:"id"`
		Event string `json:"event"`
		Data  struct {
			MessageID string `json:"messageId"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" {
		http.Error(w, "not an event", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.arrivals[ev.ID]++
	k := ev.Data.MessageID + " " + ev.Event
	if r.ids[k] == nil {
		r.ids[k] = map[string]bool{}
	}
	r.ids[k][ev.ID] = true
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// check compares what arrived with what must have: every stored delivery, and for every message
// its queued event and the event of its final status. It returns the events delivered, the most
// arrivals of one id, the events missing and the (message, event) pairs seen under two ids.
func (r *receiver) check(st state) (events, maxArrivals int, missing, doubled []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range st.deliveryIDs {
		if r.arrivals[id] == 0 {
			missing = append(missing, "delivery "+id)
		}
	}
	for id, m := range st.messages {
		want := []string{"message.queued"}
		switch m.status {
		case "sent", "delivered", "read", "failed":
			want = append(want, "message."+m.status)
		}
		for _, ev := range want {
			if len(r.ids[id+" "+ev]) == 0 {
				missing = append(missing, id+" "+ev)
			}
		}
	}
	for k, ids := range r.ids {
		if len(ids) > 1 {
			doubled = append(doubled, k)
		}
	}
	for _, n := range r.arrivals {
		events++
		maxArrivals = max(maxArrivals, n)
	}
	return events, maxArrivals, missing, doubled
}
