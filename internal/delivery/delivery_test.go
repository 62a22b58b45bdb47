package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/controller"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/index"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/pkg/webhook"
)

// cache reads through the manager's informer cache, as the workers do; k8s writes.
var cache, k8s client.Client

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		panic("start envtest (KUBEBUILDER_ASSETS; `make test` sets it): " + err.Error())
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: app.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Cache: controller.CacheOptions()})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := index.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		panic(err)
	}
	if err := controller.Setup(mgr, controller.Options{}); err != nil {
		panic(err)
	}
	go func() { _ = mgr.Start(ctx) }()
	mgr.GetCache().WaitForCacheSync(ctx)
	cache = mgr.GetClient()
	k8s, _ = client.New(cfg, client.Options{Scheme: app.Scheme()})

	code := pgtest.Run(m)
	cancel()
	_ = env.Stop()
	os.Exit(code)
}

// receiver is a loopback HTTPS webhook receiver answering with the statuses it is given, then 200.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	answers  []int
	received []*http.Request
	bodies   [][]byte
	times    []time.Time
}

func newReceiver(t *testing.T, answers ...int) *receiver {
	r := &receiver{answers: answers}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.received = append(r.received, req)
		r.bodies = append(r.bodies, body)
		r.times = append(r.times, time.Now())
		status := http.StatusOK
		if len(r.answers) > 0 {
			status, r.answers = r.answers[0], r.answers[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"ok":` + map[bool]string{true: "true", false: "false"}[status < 300] + `}`))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.received)
}

func (r *receiver) request(i int) (*http.Request, []byte, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.received[i], r.bodies[i], r.times[i]
}

// fixture is a project with a webhook-carrying sender, a worker making deliveries, and the
// service that enqueues them.
type fixture struct {
	pool    *pgxpool.Pool
	queue   *deliveryRunner
	service *delivery.Service
	project string
	sender  *v1alpha1.Sender
}

var fast = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond, 200 * time.Millisecond}

func newFixture(t *testing.T, rcv *receiver, hook v1alpha1.SenderWebhook, opts delivery.ClientOptions, schedule ...time.Duration) *fixture {
	t.Helper()
	if opts.RootCAs == nil && rcv != nil {
		opts.RootCAs = rcv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	}
	f := setup(t, hook, opts, schedule, 0)
	if err := f.queue.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return f
}

// setup makes the fixture with its worker not yet started.
func setup(tb testing.TB, hook v1alpha1.SenderWebhook, opts delivery.ClientOptions, schedule []time.Duration, concurrency int) *fixture {
	tb.Helper()
	return setupReading(tb, cache, hook, delivery.WorkerOptions{Client: opts, Schedule: schedule}, concurrency)
}

// setupReading is setup with the workers reading endpoints through reader.
func setupReading(tb testing.TB, reader client.Reader, hook v1alpha1.SenderWebhook, o delivery.WorkerOptions, concurrency int) *fixture {
	tb.Helper()
	if o.Schedule == nil {
		o.Schedule = fast
	}
	ctx := context.Background()
	pool := pgtest.NewPool(tb)
	o.Concurrency = concurrency
	queue := &deliveryRunner{w: delivery.NewWorker(pool, reader, reader, o), tb: tb}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "d-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		tb.Fatal(err)
	}
	if err := k8s.Create(ctx, &v1alpha1.Project{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "p"}}); err != nil {
		tb.Fatal(err)
	}
	s := &v1alpha1.Sender{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "support"},
		Spec:       v1alpha1.SenderSpec{DisplayName: "Support", SMSOneway: &v1alpha1.Enablement{Enabled: true}, Webhook: &hook},
	}
	if err := k8s.Create(ctx, s); err != nil {
		tb.Fatal(err)
	}
	waitFor(tb, "the sender's webhook secret", func() bool {
		return cache.Get(ctx, client.ObjectKeyFromObject(s), s) == nil && s.Status.WebhookSecret != nil &&
			cache.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: s.Status.WebhookSecret.Name}, &corev1.Secret{}) == nil
	})
	return &fixture{pool: pool, queue: queue, service: delivery.NewService(cache), project: ns.Name, sender: s}
}

// deliveryRunner runs a fixture's delivery worker from Start until the test ends.
type deliveryRunner struct {
	w  *delivery.Worker
	tb testing.TB
}

func (r *deliveryRunner) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.w.Start(ctx) }()
	r.tb.Cleanup(func() { cancel(); <-done })
	return nil
}

func (f *fixture) secret(t *testing.T) []byte {
	var s corev1.Secret
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: f.project, Name: f.sender.Status.WebhookSecret.Name}, &s); err != nil {
		t.Fatal(err)
	}
	return s.Data[f.sender.Status.WebhookSecret.Key]
}

func (f *fixture) enqueue(t *testing.T, name string, commit bool) []string {
	t.Helper()
	return f.enqueueEvent(t, delivery.Event{
		Project: f.project, Name: name, Sender: f.sender.Name,
		Data: map[string]any{"messageId": "msg_1", "status": strings.TrimPrefix(name, "message.")},
	}, commit)
}

func (f *fixture) enqueueEvent(t *testing.T, ev delivery.Event, commit bool) []string {
	t.Helper()
	ctx := context.Background()
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := f.service.Enqueue(ctx, tx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if commit {
		err = tx.Commit(ctx)
	} else {
		err = tx.Rollback(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func (f *fixture) delivery(t *testing.T, id string) (status string, attempts int) {
	t.Helper()
	if err := f.pool.QueryRow(context.Background(), "SELECT status, attempts FROM webhook_deliveries WHERE id = $1", id).Scan(&status, &attempts); err != nil {
		t.Fatal(err)
	}
	return status, attempts
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

func TestDeliveryIsSignedAndRecorded(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	f := newFixture(t, rcv, v1alpha1.SenderWebhook{URL: rcvURL(rcv)}, delivery.ClientOptions{Allow: loopback})
	ids := f.enqueue(t, "message.delivered", true)
	if len(ids) != 1 || !strings.HasPrefix(ids[0], "evt_") {
		t.Fatalf("Enqueue = %v", ids)
	}
	waitFor(t, "delivered", func() bool { s, _ := f.delivery(t, ids[0]); return s == "delivered" })

	req, body, _ := rcv.request(0)
	if err := webhook.Verify(req.Header.Get("X-Service-Signature"), body, f.secret(t), time.Minute, time.Now()); err != nil {
		t.Errorf("signature: %v (header %q)", err, req.Header.Get("X-Service-Signature"))
	}
	if !strings.Contains(req.Header.Get("X-Service-Signature"), ",v2=") || strings.Contains(req.Header.Get("X-Service-Signature"), "v1=") {
		t.Errorf("a new webhook signs with v2 only: %q", req.Header.Get("X-Service-Signature"))
	}
	var env struct {
		ID, Event, Timestamp string
		Data                 map[string]any
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatal(err)
	}
	if env.ID != ids[0] || env.Event != "message.delivered" || req.Header.Get("X-Service-Event") != "message.delivered" ||
		env.Data["senderId"] != "support" || env.Data["status"] != "delivered" {
		t.Errorf("body %s, headers %v", body, req.Header)
	}
	if _, err := time.Parse(time.RFC3339Nano, env.Timestamp); err != nil {
		t.Errorf("timestamp %q: %v", env.Timestamp, err)
	}
	var code, attempt int
	var resp string
	if err := f.pool.QueryRow(context.Background(),
		"SELECT attempt, status_code, response_body FROM webhook_delivery_attempts WHERE delivery_id = $1", ids[0]).Scan(&attempt, &code, &resp); err != nil {
		t.Fatal(err)
	}
	if attempt != 1 || code != 200 || resp != `{"ok":true}` {
		t.Errorf("attempt log: %d %d %q", attempt, code, resp)
	}
}

func TestRetriesOnScheduleUntilDelivered(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, 500, 503)
	f := newFixture(t, rcv, v1alpha1.SenderWebhook{URL: rcvURL(rcv)}, delivery.ClientOptions{Allow: loopback})
	ids := f.enqueue(t, "message.sent", true)
	waitFor(t, "delivered", func() bool { s, _ := f.delivery(t, ids[0]); return s == "delivered" })
	if _, attempts := f.delivery(t, ids[0]); attempts != 3 || rcv.count() != 3 {
		t.Fatalf("attempts %d, receiver got %d, want 3 and 3", attempts, rcv.count())
	}
	_, _, first := rcv.request(0)
	for i, offset := range []time.Duration{fast[0], fast[1]} {
		_, _, at := rcv.request(i + 1)
		if at.Sub(first) < offset-10*time.Millisecond {
			t.Errorf("attempt %d came %v after the first, before its +%v", i+2, at.Sub(first), offset)
		}
	}
	// One delivery, one event id, through every attempt.
	var seen []string
	for i := 0; i < 3; i++ {
		_, body, _ := rcv.request(i)
		var env struct{ ID string }
		_ = json.Unmarshal(body, &env)
		seen = append(seen, env.ID)
	}
	if seen[0] != ids[0] || seen[1] != ids[0] || seen[2] != ids[0] {
		t.Errorf("event ids across attempts %v, want %s each time", seen, ids[0])
	}
	var codes []int
	rows, _ := f.pool.Query(context.Background(), "SELECT status_code FROM webhook_delivery_attempts WHERE delivery_id = $1 ORDER BY attempt", ids[0])
	codes, _ = pgx.CollectRows(rows, pgx.RowTo[int])
	if len(codes) != 3 || codes[0] != 500 || codes[1] != 503 || codes[2] != 200 {
		t.Errorf("attempt log %v", codes)
	}
}

func TestGivesUpAfterFiveAttempts(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, 500, 500, 500, 500, 500, 500, 500)
	f := newFixture(t, rcv, v1alpha1.SenderWebhook{URL: rcvURL(rcv)}, delivery.ClientOptions{Allow: loopback})
	ids := f.enqueue(t, "message.failed", true)
	waitFor(t, "failed", func() bool { s, _ := f.delivery(t, ids[0]); return s == "failed" })
	time.Sleep(300 * time.Millisecond) // a sixth attempt would come by now
	if _, attempts := f.delivery(t, ids[0]); attempts != 5 || rcv.count() != 5 {
		t.Fatalf("attempts %d, receiver got %d, want 5 and 5", attempts, rcv.count())
	}
}

func TestARolledBackChangeDeliversNothing(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	f := newFixture(t, rcv, v1alpha1.SenderWebhook{URL: rcvURL(rcv)}, delivery.ClientOptions{Allow: loopback})
	ids := f.enqueue(t, "message.queued", false)
	time.Sleep(300 * time.Millisecond)
	var n int
	_ = f.pool.QueryRow(context.Background(), "SELECT count(*) FROM webhook_deliveries WHERE id = $1", ids[0]).Scan(&n)
	if n != 0 || rcv.count() != 0 {
		t.Fatalf("rolled back: %d rows, %d requests", n, rcv.count())
	}
}

func TestSignatureVersionChangeAppliesToTheNextAttempt(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, 500)
	// The first retry waits two seconds, so the change lands between the attempts.
	f := newFixture(t, rcv, v1alpha1.SenderWebhook{URL: rcvURL(rcv), SignatureVersion: v1alpha1.SignatureV1},
		delivery.ClientOptions{Allow: loopback}, 2*time.Second, time.Second, time.Second, time.Second)
	ids := f.enqueue(t, "message.read", true)
	waitFor(t, "first attempt", func() bool { return rcv.count() >= 1 })
	req, _, _ := rcv.request(0)
	if h := req.Header.Get("X-Service-Signature"); !strings.Contains(h, "v1=") || strings.Contains(h, "v2=") {
		t.Fatalf("first attempt signed %q, want v1 only", h)
	}

	ctx := context.Background()
	s := f.sender.DeepCopy()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
		t.Fatal(err)
	}
	s.Spec.Webhook.SignatureVersion = v1alpha1.SignatureV1V2
	if err := k8s.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the cache sees v1+v2", func() bool {
		return cache.Get(ctx, client.ObjectKeyFromObject(s), s) == nil && s.Spec.Webhook.SignatureVersion == v1alpha1.SignatureV1V2
	})
	if rcv.count() != 1 {
		t.Fatalf("the retry came before the change was seen; the test's schedule is too short")
	}

	waitFor(t, "delivered", func() bool { st, _ := f.delivery(t, ids[0]); return st == "delivered" })
	req, body, _ := rcv.request(1)
	h := req.Header.Get("X-Service-Signature")
	if !strings.Contains(h, "v1=") || !strings.Contains(h, "v2=") {
		t.Fatalf("second attempt signed %q, want v1 and v2 with one timestamp", h)
	}
	if err := webhook.Verify(h, body, f.secret(t), time.Minute, time.Now()); err != nil {
		t.Fatal(err)
	}
}

func TestUnsubscribedOrSwitchedOffGetsNothing(t *testing.T) {
	t.Parallel()
	off := false
	for name, hook := range map[string]v1alpha1.SenderWebhook{
		"unsubscribed": {URL: "https://127.0.0.1:1/hook", Events: []v1alpha1.WebhookEvent{"message.failed"}},
		"switched off": {URL: "https://127.0.0.1:1/hook", Active: &off},
	} {
		f := newFixture(t, nil, hook, delivery.ClientOptions{})
		if ids := f.enqueue(t, "message.delivered", true); len(ids) != 0 {
			t.Errorf("%s: enqueued %v", name, ids)
		}
	}
}

func TestForbiddenAddressesAreNeverContacted(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	// No allow-list: loopback is forbidden like every private range.
	f := newFixture(t, rcv, v1alpha1.SenderWebhook{URL: rcvURL(rcv)}, delivery.ClientOptions{})
	ids := f.enqueue(t, "message.delivered", true)
	waitFor(t, "failed", func() bool { s, _ := f.delivery(t, ids[0]); return s == "failed" })
	var msg string
	_ = f.pool.QueryRow(context.Background(), "SELECT error FROM webhook_delivery_attempts WHERE delivery_id = $1 AND attempt = 1", ids[0]).Scan(&msg)
	if rcv.count() != 0 || !strings.Contains(msg, "address not allowed") {
		t.Fatalf("receiver got %d requests; attempt error %q", rcv.count(), msg)
	}
}

func TestPlainHTTPIsRefused(t *testing.T) {
	t.Parallel()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { t.Error("plain http receiver contacted") }))
	defer plain.Close()
	f := newFixture(t, nil, v1alpha1.SenderWebhook{URL: plain.URL + "/hook"}, delivery.ClientOptions{Allow: loopback})
	ids := f.enqueue(t, "message.delivered", true)
	waitFor(t, "failed", func() bool { s, _ := f.delivery(t, ids[0]); return s == "failed" })
	// No installation but dev delivers plain http: the delivery fails at once, saying why.
	var lastError string
	_ = f.pool.QueryRow(context.Background(), "SELECT last_error FROM webhook_deliveries WHERE id = $1", ids[0]).Scan(&lastError)
	if _, attempts := f.delivery(t, ids[0]); attempts != 1 || lastError != "webhook URL must be https: this installation delivers plain http to no receiver" {
		t.Fatalf("%d attempts, last error %q; want 1 and the reason", attempts, lastError)
	}
}

// storedURL reads senders through the cache with their webhook URL replaced, as if stored
// before the CRD refused it.
type storedURL struct {
	client.Reader
	url string
}

func (r storedURL) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.Reader.Get(ctx, key, obj, opts...)
	if s, ok := obj.(*v1alpha1.Sender); ok && err == nil && s.Spec.Webhook != nil {
		s.Spec.Webhook.URL = r.url
	}
	return err
}

func TestAURLWithCredentialsIsNeitherUsedNorLogged(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	withCredentials := strings.Replace(rcvURL(rcv), "https://", "https://user:s3cr3t@", 1)
	opts := delivery.ClientOptions{Allow: loopback, RootCAs: rcv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	f := setupReading(t, storedURL{Reader: cache, url: withCredentials}, v1alpha1.SenderWebhook{URL: rcvURL(rcv)}, delivery.WorkerOptions{Client: opts}, 0)
	if err := f.queue.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ids := f.enqueue(t, "message.delivered", true)
	waitFor(t, "failed", func() bool { s, _ := f.delivery(t, ids[0]); return s == "failed" })
	var url, attemptError, lastError string
	if err := f.pool.QueryRow(context.Background(), `SELECT a.url, a.error, d.last_error FROM webhook_delivery_attempts a
		JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE a.delivery_id = $1`, ids[0]).Scan(&url, &attemptError, &lastError); err != nil {
		t.Fatal(err)
	}
	if url != rcvURL(rcv) || !strings.Contains(lastError, "must not carry credentials") {
		t.Errorf("attempt log: url %q, last error %q", url, lastError)
	}
	var jobErrors string
	_ = f.pool.QueryRow(context.Background(), "SELECT coalesce(errors::text, '') FROM river_job WHERE args->>'deliveryId' = $1", ids[0]).Scan(&jobErrors)
	for _, logged := range []string{url, attemptError, lastError, jobErrors} {
		if strings.Contains(logged, "s3cr3t") {
			t.Errorf("credentials logged: %q", logged)
		}
	}
	if _, attempts := f.delivery(t, ids[0]); attempts != 1 || rcv.count() != 0 {
		t.Errorf("%d attempts, receiver got %d requests; want 1 and none", attempts, rcv.count())
	}
}

func TestDeliveriesSayTheirMode(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	f := newFixture(t, rcv, v1alpha1.SenderWebhook{URL: rcvURL(rcv)}, delivery.ClientOptions{Allow: loopback})
	cases := []struct {
		mode delivery.Mode
		want string
	}{{delivery.ModeOf(true), "test"}, {delivery.ModeOf(false), "live"}, {"", ""}}
	var envelopes [][]byte
	for i, c := range cases {
		ids := f.enqueueEvent(t, delivery.Event{Project: f.project, Name: "message.sent", Sender: f.sender.Name,
			Data: map[string]any{"messageId": "msg_1"}, Mode: c.mode}, true)
		waitFor(t, "delivered", func() bool { s, _ := f.delivery(t, ids[0]); return s == "delivered" })
		req, body, _ := rcv.request(i)
		if got, present := req.Header[delivery.ModeHeader]; c.want == "" && present || c.want != "" && (len(got) != 1 || got[0] != c.want) {
			t.Errorf("mode %q: %s = %q, want %q", c.mode, delivery.ModeHeader, got, c.want)
		}
		var env map[string]any
		_ = json.Unmarshal(body, &env)
		delete(env, "id")
		delete(env, "timestamp")
		b, _ := json.Marshal(env)
		envelopes = append(envelopes, b)
	}
	// The envelope is the same whatever the mode.
	if string(envelopes[0]) != string(envelopes[1]) || string(envelopes[1]) != string(envelopes[2]) {
		t.Errorf("envelopes differ by mode: %s", envelopes)
	}
}

func rcvURL(r *receiver) string { return r.URL + "/hook" }

func TestEveryEventFansOutToEverySubscribedEndpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	senderRcv, projectRcv := newReceiver(t), newReceiver(t)
	roots := senderRcv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	roots.AddCert(projectRcv.Certificate())
	f := newFixture(t, senderRcv, v1alpha1.SenderWebhook{URL: rcvURL(senderRcv)}, delivery.ClientOptions{Allow: loopback, RootCAs: roots})

	v2 := &v1alpha1.Webhook{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.project, Name: "v2"},
		Spec:       v1alpha1.WebhookSpec{Kind: v1alpha1.WebhookKindV2, URL: rcvURL(projectRcv), Events: []v1alpha1.WebhookEvent{"message.delivered"}},
	}
	if err := k8s.Create(ctx, v2); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the v2 webhook's secret", func() bool {
		return cache.Get(ctx, client.ObjectKeyFromObject(v2), v2) == nil && v2.Status.WebhookSecret != nil &&
			cache.Get(ctx, client.ObjectKey{Namespace: f.project, Name: v2.Status.WebhookSecret.Name}, &corev1.Secret{}) == nil
	})
	var v2Secret corev1.Secret
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: f.project, Name: v2.Status.WebhookSecret.Name}, &v2Secret); err != nil {
		t.Fatal(err)
	}

	ids := f.enqueue(t, "message.delivered", true)
	if len(ids) != 2 || ids[0] == ids[1] {
		t.Fatalf("Enqueue = %v, want two deliveries with their own event ids", ids)
	}
	waitFor(t, "both delivered", func() bool { return senderRcv.count() == 1 && projectRcv.count() == 1 })

	req, body, _ := projectRcv.request(0)
	if err := webhook.Verify(req.Header.Get("X-Service-Signature"), body, v2Secret.Data["secret"], time.Minute, time.Now()); err != nil {
		t.Fatalf("v2 delivery signature: %v", err)
	}
	var env map[string]any
	_ = json.Unmarshal(body, &env)
	data, _ := env["data"].(map[string]any)
	if env["projectId"] != f.project || env["event"] != "message.delivered" || data["senderId"] != nil || data["status"] != "delivered" {
		t.Errorf("v2 envelope %s", body)
	}
	if _, isNumber := env["timestamp"].(float64); !isNumber {
		t.Errorf("v2 timestamp %v is not Unix milliseconds", env["timestamp"])
	}
	_, body, _ = senderRcv.request(0)
	_ = json.Unmarshal(body, &env)
	if env["data"].(map[string]any)["senderId"] != "support" {
		t.Errorf("sender envelope %s", body)
	}

	// The v2 webhook takes only what it subscribed to; the sender webhook takes everything.
	if ids := f.enqueue(t, "message.failed", true); len(ids) != 1 {
		t.Errorf("message.failed went to %d endpoints, want the sender's only", len(ids))
	}
}

// A webhook whose signing Secret does not exist yet (a user's, not created yet) still gets its
// delivery: the attempt fails and is retried, nothing unsigned is sent, and once the Secret
// exists the delivery is signed with it.
func TestAWebhookWhoseSecretIsMissingIsRetriedNotCancelled(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	f := newFixture(t, rcv, v1alpha1.SenderWebhook{URL: rcvURL(rcv)}, delivery.ClientOptions{Allow: loopback}, 200*time.Millisecond, time.Second)
	ctx := context.Background()
	ref := &v1alpha1.SecretKeyRef{Name: "late-secret", Key: "signing"}
	s := &v1alpha1.Sender{}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(f.sender), s); err != nil {
			return err
		}
		s.Spec.Webhook.SecretRef = ref
		return k8s.Update(ctx, s)
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the cache sees the secretRef", func() bool {
		var seen v1alpha1.Sender
		return cache.Get(ctx, client.ObjectKeyFromObject(s), &seen) == nil && seen.Spec.Webhook.SecretRef != nil
	})

	ids := f.enqueue(t, "message.sent", true)
	if len(ids) != 1 {
		t.Fatalf("Enqueue = %v: a subscribed webhook gets its delivery whether or not its secret exists yet", ids)
	}
	// The claim counts the attempt at once; its outcome is recorded a moment later.
	var lastError string
	waitFor(t, "the first attempt recorded", func() bool {
		return f.pool.QueryRow(ctx, "SELECT error FROM webhook_delivery_attempts WHERE delivery_id = $1 AND attempt = 1", ids[0]).Scan(&lastError) == nil
	})
	if status, _ := f.delivery(t, ids[0]); status != "pending" || !strings.Contains(lastError, "signing secret") || rcv.count() != 0 {
		t.Fatalf("after the first attempt: %s %q, receiver got %d", status, lastError, rcv.count())
	}

	value := []byte("whsec_late0000000000000000000000000000")
	if err := k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.project, Name: ref.Name,
		Labels: map[string]string{v1alpha1.SecretLabel: "true"}}, Data: map[string][]byte{ref.Key: value}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "delivered", func() bool { s, _ := f.delivery(t, ids[0]); return s == "delivered" })
	req, body, _ := rcv.request(0)
	if err := webhook.Verify(req.Header.Get("X-Service-Signature"), body, value, time.Minute, time.Now()); err != nil || rcv.count() != 1 {
		t.Errorf("signature: %v; receiver got %d", err, rcv.count())
	}
}

// A receiver that holds its requests takes at most its host's share of the delivery slots: the
// deliveries to another receiver go on meanwhile, and the held ones are delivered once it
// answers.
func TestASlowReceiverDoesNotHoldTheOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	release := make(chan struct{})
	var mu sync.Mutex
	var inFlight, maxInFlight, slowDone int
	slow := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		maxInFlight = max(maxInFlight, inFlight)
		mu.Unlock()
		<-release
		mu.Lock()
		inFlight--
		slowDone++
		mu.Unlock()
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	good := newReceiver(t)
	roots := good.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	roots.AddCert(slow.Certificate())
	opts := delivery.ClientOptions{Allow: loopback, RootCAs: roots, Timeout: time.Minute}
	const perHost, events = 2, 20
	f := setupReading(t, cache, v1alpha1.SenderWebhook{URL: slow.URL + "/hook"},
		delivery.WorkerOptions{Client: opts, PerHostConcurrency: perHost}, 6)
	if err := f.queue.Start(ctx); err != nil {
		t.Fatal(err)
	}
	v2 := &v1alpha1.Webhook{ObjectMeta: metav1.ObjectMeta{Namespace: f.project, Name: "v2"},
		Spec: v1alpha1.WebhookSpec{Kind: v1alpha1.WebhookKindV2, URL: rcvURL(good)}}
	if err := k8s.Create(ctx, v2); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the cache sees the v2 webhook", func() bool { return cache.Get(ctx, client.ObjectKeyFromObject(v2), v2) == nil })

	for range events {
		if ids := f.enqueue(t, "message.sent", true); len(ids) != 2 {
			t.Fatalf("Enqueue = %v, want one delivery to each receiver", ids)
		}
	}
	waitFor(t, "the good receiver's deliveries, while the slow one holds its requests", func() bool { return good.count() == events })
	mu.Lock()
	held, most := inFlight, maxInFlight
	mu.Unlock()
	if most > perHost || held == 0 {
		t.Fatalf("the slow receiver had %d requests at once (bound %d), %d now", most, perHost, held)
	}

	close(release)
	waitFor(t, "the slow receiver's deliveries", func() bool {
		var pending int
		_ = f.pool.QueryRow(ctx, "SELECT count(*) FROM webhook_deliveries WHERE status <> 'delivered'").Scan(&pending)
		return pending == 0
	})
	var attempts int
	if err := f.pool.QueryRow(ctx, "SELECT count(*) FROM webhook_delivery_attempts").Scan(&attempts); err != nil {
		t.Fatal(err)
	}
	if attempts != 2*events {
		rows, _ := f.pool.Query(ctx, "SELECT delivery_id, attempt, coalesce(status_code, 0), coalesce(error, '') FROM webhook_delivery_attempts WHERE attempt > 1 OR error IS NOT NULL")
		log, _ := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			var id, msg string
			var attempt, code int
			err := r.Scan(&id, &attempt, &code, &msg)
			return fmt.Sprintf("%s #%d %d %s", id, attempt, code, msg), err
		})
		t.Errorf("%d attempts for %d deliveries: waiting for a busy host must not count as an attempt; %v", attempts, 2*events, log)
	}
}

// A receiver that always answers 500 and one that drops the connection only delay their own
// deliveries: the others arrive at once, and the bad ones wait for the spec's schedule (the
// second attempt a minute after the first), one attempt each so far.
func TestFailingReceiversDoNotHoldTheOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bad := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Service-Event") == "message.sent" {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close() // no answer at all
			}
			return
		}
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	t.Cleanup(bad.Close)
	good := newReceiver(t)
	roots := good.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	roots.AddCert(bad.Certificate())
	f := setupReading(t, cache, v1alpha1.SenderWebhook{URL: rcvURL(good)},
		delivery.WorkerOptions{Client: delivery.ClientOptions{Allow: loopback, RootCAs: roots}, Schedule: delivery.Schedule}, 6)
	v2 := &v1alpha1.Webhook{ObjectMeta: metav1.ObjectMeta{Namespace: f.project, Name: "v2"},
		Spec: v1alpha1.WebhookSpec{Kind: v1alpha1.WebhookKindV2, URL: bad.URL + "/hook"}}
	if err := k8s.Create(ctx, v2); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the cache sees the v2 webhook", func() bool { return cache.Get(ctx, client.ObjectKeyFromObject(v2), v2) == nil })
	if err := f.queue.Start(ctx); err != nil {
		t.Fatal(err)
	}

	const events = 20
	for i := range events {
		name := []string{"message.sent", "message.delivered"}[i%2]
		if ids := f.enqueue(t, name, true); len(ids) != 2 {
			t.Fatalf("Enqueue = %v, want one delivery to each receiver", ids)
		}
	}
	waitFor(t, "the good receiver's deliveries", func() bool { return good.count() == events })
	waitFor(t, "the bad receiver's first attempts recorded", func() bool {
		var n int
		_ = f.pool.QueryRow(ctx, `SELECT count(*) FROM webhook_delivery_attempts a
			JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_kind = 'project_v2'`).Scan(&n)
		return n == events
	})
	rows, err := f.pool.Query(ctx, `SELECT d.event, d.status, d.attempts, extract(epoch FROM d.next_attempt_at - d.created_at)::float8,
			coalesce(a.status_code, 0), coalesce(a.error, '')
		FROM webhook_deliveries d JOIN webhook_delivery_attempts a ON a.delivery_id = d.id WHERE d.endpoint_kind = 'project_v2'`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		event, status string
		attempts      int
		wait          float64
		code          int
		err           string
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.event, &x.status, &x.attempts, &x.wait, &x.code, &x.err)
		return x, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != events {
		t.Fatalf("%d attempts to the bad receiver, want %d (one each)", len(got), events)
	}
	for _, x := range got {
		if x.status != "pending" || x.attempts != 1 || x.wait < 59 || x.wait > 61 {
			t.Errorf("%s: %s after %d attempts, next in %.0f s; want pending, next a minute after the first", x.event, x.status, x.attempts, x.wait)
		}
		switch {
		case x.event == "message.sent" && (x.code != 0 || x.err == ""):
			t.Errorf("a dropped connection was recorded as %d %q", x.code, x.err)
		case x.event == "message.delivered" && x.code != http.StatusInternalServerError:
			t.Errorf("a 500 was recorded as %d %q", x.code, x.err)
		}
	}
}
