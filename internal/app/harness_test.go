package app_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/httpapi"
	"github.com/switchboard-io/switchboard/internal/postgres"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

// instance is one `all` process on real Postgres and a real kube-apiserver.
type instance struct {
	t     testing.TB
	url   string
	k8s   client.Client
	keys  *apikey.Service
	count func(sql string, args ...any) int
	// poolRow runs a query of one row on the instance's database.
	poolRow func(sql string, args ...any) pgx.Row
	// db is the instance's database.
	db *pgxpool.Pool
}

type option func(*app.Config)

// fastSandbox paces the sandbox in milliseconds, and refreshes Sender activity as often.
func fastSandbox(c *app.Config) {
	c.Sandbox = app.SandboxOptions{DeliverAfter: 50 * time.Millisecond, ReadAfter: 50 * time.Millisecond}
	c.SenderActivityEvery = 200 * time.Millisecond
}

// deliveringTo lets webhook deliveries reach a loopback TLS receiver.
func deliveringTo(rootCAs *x509.CertPool) option {
	return func(c *app.Config) {
		c.Delivery = delivery.WorkerOptions{Client: delivery.ClientOptions{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, RootCAs: rootCAs},
			Schedule: []time.Duration{50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}}
	}
}

// onDatabase makes the instance use an existing database, as a second replica would.
func onDatabase(url string) option {
	return func(c *app.Config) { c.Pool = mustOpen(url) }
}

func mustOpen(url string) *pgxpool.Pool {
	pool, err := postgres.Open(context.Background(), url)
	if err != nil {
		panic(err)
	}
	return pool
}

func withRedis(url string) option {
	return func(c *app.Config) {
		opts, err := redis.ParseURL(url)
		if err != nil {
			panic(err)
		}
		opts.MaxRetries = -1
		c.Redis = redis.NewClient(opts)
	}
}

func start(t testing.TB, opts ...option) *instance {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	k8s, err := client.New(testEnv.Config, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := app.Config{
		Role: app.RoleAll, RestConfig: testEnv.Config, Listener: listener,
		MetricsAddr: "0", HealthAddr: "0", WorkerConcurrency: 2, Log: logFor(t),
		SkipControllerNameValidation: true,
		// Tests point the Providers of their projects at loopback peers, as an operator may
		// allow (--allow-project-provider-endpoints); projectEndpointsRefused turns it off.
		AllowProjectEndpoints: true,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.Pool == nil {
		cfg.Pool = mustOpen(pgtest.NewDatabase(t))
	}
	pool := cfg.Pool
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("app.Run: %v", err)
		}
		pool.Close()
	})
	in := &instance{t: t, url: "http://" + listener.Addr().String(), k8s: k8s, keys: apikey.NewService(pool)}
	in.db = pool
	in.poolRow = func(sql string, args ...any) pgx.Row { return pool.QueryRow(context.Background(), sql, args...) }
	in.count = func(sql string, args ...any) int {
		var n int
		if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if cfg.Role != app.RoleAPI && cfg.Role != app.RoleAll {
		// Only the API serves /readyz on the listener; callers of other roles watch for what
		// the process does.
		return in
	}
	waitFor(t, func() bool {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("app.Run returned before it was ready: %v", err)
		default:
		}
		resp, err := http.Get(in.url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return in
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// response is what a request got back.
type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

// do sends a request and checks the answer against the OpenAPI document of its generation, so
// the documents cannot drift from what the server does.
func (in *instance) do(method, path, auth string, body io.Reader) response {
	in.t.Helper()
	req, err := http.NewRequest(method, in.url+path, body)
	if err != nil {
		in.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return in.doRequest(req)
}

// doRequest sends req as do does.
func (in *instance) doRequest(req *http.Request) response {
	in.t.Helper()
	method, path := req.Method, req.URL.Path
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		in.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &out.body); err != nil && resp.StatusCode != http.StatusOK {
			in.t.Fatalf("%s %s: body is not JSON: %s", method, path, raw)
		}
	}
	if strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/v2/") {
		checkOpenAPI(in.t, req, resp, raw)
	}
	return out
}

func (in *instance) get(path, auth string) response { return in.do(http.MethodGet, path, auth, nil) }

func (in *instance) post(path, auth, body string) response {
	return in.do(http.MethodPost, path, auth, strings.NewReader(body))
}

// openAPIDoc is one generation's document, ready to check responses against.
type openAPIDoc struct {
	name     string
	doc      map[string]any
	compiler *jsonschema.Compiler
}

var (
	docsOnce sync.Once
	docs     map[string]*openAPIDoc
)

// checkOpenAPI checks a response against the operation and status its document describes: the
// status must be documented, and a JSON body must match the documented schema.
func checkOpenAPI(t testing.TB, req *http.Request, resp *http.Response, raw []byte) {
	t.Helper()
	docsOnce.Do(func() {
		docs = map[string]*openAPIDoc{}
		for _, g := range []string{"v1", "v2"} {
			b, err := httpapi.OpenAPIDocument(g)
			if err != nil {
				t.Fatal(err)
			}
			d := &openAPIDoc{name: "openapi-" + g + ".json", compiler: jsonschema.NewCompiler()}
			parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if err := d.compiler.AddResource(d.name, parsed); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &d.doc); err != nil {
				t.Fatal(err)
			}
			docs[g] = d
		}
	})
	d := docs[strings.Split(req.URL.Path, "/")[1]]
	template, op := d.operation(req.Method, req.URL.Path)
	if op == nil {
		// An unknown path or method is not in the document by definition; the tests check the
		// shape of those 401, 404 and 405 answers themselves.
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusNotFound, http.StatusMethodNotAllowed:
			return
		}
		t.Errorf("%s %s → %d: the operation is not in the %s document", req.Method, req.URL.Path, resp.StatusCode, d.name)
		return
	}
	responses, _ := op["responses"].(map[string]any)
	pointer := "/paths/" + escape(template) + "/" + strings.ToLower(req.Method) + "/responses/" + strconv.Itoa(resp.StatusCode)
	r, ok := responses[strconv.Itoa(resp.StatusCode)].(map[string]any)
	if !ok {
		t.Errorf("%s %s → %d: status not documented in %s", req.Method, req.URL.Path, resp.StatusCode, d.name)
		return
	}
	if ref, ok := r["$ref"].(string); ok {
		pointer = strings.TrimPrefix(ref, "#")
		r = d.lookup(pointer)
	}
	content, _ := r["content"].(map[string]any)
	if _, ok := content["application/json"]; !ok || len(raw) == 0 {
		return
	}
	schema, err := d.compiler.Compile(d.name + "#" + pointer + "/content/application~1json/schema")
	if err != nil {
		t.Fatalf("compile schema at %s: %v", pointer, err)
	}
	instance, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Errorf("%s %s → %d: body is not JSON", req.Method, req.URL.Path, resp.StatusCode)
		return
	}
	if err := schema.Validate(instance); err != nil {
		t.Errorf("%s %s → %d does not match %s: %v\nbody: %s", req.Method, req.URL.Path, resp.StatusCode, d.name, err, raw)
	}
}

// operation finds the path template and operation of method and path.
func (d *openAPIDoc) operation(method, path string) (string, map[string]any) {
	paths, _ := d.doc["paths"].(map[string]any)
	// A literal path wins over a template that also matches it (/v1/templates/sync over
	// /v1/templates/{templateId}), as it does in the server's router.
	if item, ok := paths[path].(map[string]any); ok {
		op, _ := item[strings.ToLower(method)].(map[string]any)
		return path, op
	}
	// Of the templates that match, the one with the most literal segments wins
	// (/v1/senders/{senderId}/webhook/deliveries/replay over …/deliveries/{deliveryId}).
	best, bestOp, bestParams := "", map[string]any(nil), -1
	for template, item := range paths {
		re := "^" + regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(regexp.QuoteMeta(template), `[^/]+`) + "$"
		re = strings.ReplaceAll(re, `\[^/]+`, `[^/]+`)
		if regexp.MustCompile(re).MatchString(path) {
			if params := strings.Count(template, "{"); bestParams < 0 || params < bestParams {
				op, _ := item.(map[string]any)[strings.ToLower(method)].(map[string]any)
				best, bestOp, bestParams = template, op, params
			}
		}
	}
	return best, bestOp
}

func (d *openAPIDoc) lookup(pointer string) map[string]any {
	var cur any = d.doc
	for _, part := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		cur = cur.(map[string]any)[part]
	}
	m, _ := cur.(map[string]any)
	return m
}

func escape(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1") }

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// fieldErrors returns details.errors of an error answer (none when there are none).
func fieldErrors(r response) []any {
	details, _ := r.body["details"].(map[string]any)
	errs, _ := details["errors"].([]any)
	return errs
}

// fieldPaths are the paths of the field errors of a 400, in order.
func fieldPaths(r response) []string {
	var paths []string
	for _, e := range fieldErrors(r) {
		m, _ := e.(map[string]any)
		p, _ := m["path"].(string)
		paths = append(paths, p)
	}
	return paths
}

// logFor logs through the test, and not at all under a benchmark, whose output is its figures.
func logFor(t testing.TB) logr.Logger {
	if tt, ok := t.(*testing.T); ok {
		return testr.New(tt)
	}
	return logr.Discard()
}
