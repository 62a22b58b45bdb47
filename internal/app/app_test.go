package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/postgres"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

var testEnv *envtest.Environment

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard()) // each test logs through testr instead
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	if _, err := testEnv.Start(); err != nil {
		panic("start envtest (KUBEBUILDER_ASSETS; `make test` sets it): " + err.Error())
	}
	code := pgtest.Run(m)
	_ = testEnv.Stop()
	os.Exit(code)
}

func start(t *testing.T) (string, client.Client, *apikey.Service, func(sql string, args ...any) int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pool, err := postgres.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	k8s, err := client.New(testEnv.Config, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- app.Run(ctx, app.Config{
			Role: app.RoleAll, RestConfig: testEnv.Config, Pool: pool, Listener: listener,
			MetricsAddr: "0", HealthAddr: "0", WorkerConcurrency: 2, Log: testr.New(t),
			SkipControllerNameValidation: true,
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("app.Run: %v", err)
		}
		pool.Close()
	})
	url := "http://" + listener.Addr().String()
	waitFor(t, func() bool {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("app.Run returned before it was ready: %v", err)
		default:
		}
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	count := func(sql string, args ...any) int {
		var n int
		if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	return url, k8s, apikey.NewService(pool), count
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func get(t *testing.T, url, auth string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatalf("%s: body is not JSON: %s", url, b)
		}
	}
	return resp.StatusCode, resp.Header, body
}

func newProject(t *testing.T, k8s client.Client, spec v1alpha1.ProjectSpec) string {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "p-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	p := &v1alpha1.Project{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "project"}, Spec: spec}
	if err := k8s.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func TestHealthAndReadiness(t *testing.T) {
	url, _, _, _ := start(t)
	for _, path := range []string{"/healthz", "/readyz", "/readyz/postgres", "/readyz/informers"} {
		if status, _, _ := get(t, url+path, ""); status != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", path, status)
		}
	}
}

func TestMeTellsWhoTheKeyIs(t *testing.T) {
	url, k8s, keys, count := start(t)
	ctx := context.Background()
	acme := newProject(t, k8s, v1alpha1.ProjectSpec{DisplayName: "Acme", Team: "acme-team"})
	sub := newProject(t, k8s, v1alpha1.ProjectSpec{Parent: acme})

	acmeKey, acmeStored, err := keys.Create(ctx, acme, "backend", apikey.Live, nil)
	if err != nil {
		t.Fatal(err)
	}
	subKey, _, err := keys.Create(ctx, sub, "backend", apikey.Test, nil)
	if err != nil {
		t.Fatal(err)
	}

	var me map[string]any
	waitFor(t, func() bool { // the informer cache sees the new Project shortly after it is created
		var status int
		status, _, me = get(t, url+"/v1/me", "Bearer "+acmeKey)
		return status == http.StatusOK && me["project"].(map[string]any)["name"] != nil
	})
	want := map[string]any{
		"apiKey":     map[string]any{"id": acmeStored.ID},
		"isTestMode": false,
		"project":    map[string]any{"id": acme, "isSubAccount": false, "name": "Acme"},
		"team":       map[string]any{"id": "acme-team", "name": nil},
	}
	if !jsonEqual(me, want) {
		t.Fatalf("GET /v1/me = %v, want %v", me, want)
	}

	waitFor(t, func() bool {
		status, _, me := get(t, url+"/v1/me", "Bearer "+subKey)
		p := me["project"].(map[string]any)
		return status == http.StatusOK && p["id"] == sub && p["isSubAccount"] == true && me["isTestMode"] == true
	})

	// The worker records the use, off the request's path.
	waitFor(t, func() bool {
		return count("SELECT count(*) FROM api_keys WHERE id = $1 AND last_used_at IS NOT NULL", acmeStored.ID) == 1
	})
}

func TestBadKeysGetUnauthorizedAndChangeNothing(t *testing.T) {
	url, k8s, keys, count := start(t)
	ctx := context.Background()
	acme := newProject(t, k8s, v1alpha1.ProjectSpec{})
	revoked, k, err := keys.Create(ctx, acme, "old", apikey.Live, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := count("WITH r AS (UPDATE api_keys SET revoked_at = now() WHERE id = $1 RETURNING 1) SELECT count(*) FROM r", k.ID); n != 1 {
		t.Fatal("revoke test key")
	}

	for name, auth := range map[string]string{
		"no header":          "",
		"bearer, no key":     "Bearer ",
		"bearer only":        "Bearer",
		"basic scheme":       "Basic c3ZjOnRlc3Q=",
		"random valid shape": "Bearer svc_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"random tail":        "Bearer svc_test_x",
		"revoked":            "Bearer " + revoked,
	} {
		status, _, body := get(t, url+"/v1/me", auth)
		if status != http.StatusUnauthorized || body["code"] != "unauthorized" || body["message"] == "" {
			t.Errorf("%s: GET /v1/me = %d %v, want 401 {code: unauthorized, message}", name, status, body)
		}
	}
	if n := count("SELECT count(*) FROM river_job"); n != 0 {
		t.Errorf("refused requests enqueued %d jobs, want none", n)
	}
	if n := count("SELECT count(*) FROM api_keys WHERE last_used_at IS NOT NULL"); n != 0 {
		t.Errorf("refused requests touched %d keys, want none", n)
	}
}

func TestUnknownPathIsNotFoundInTheErrorShape(t *testing.T) {
	url, _, _, _ := start(t)
	status, h, body := get(t, url+"/v1/no-such-thing", "")
	if status != http.StatusNotFound || body["code"] != "not_found" || h.Get("Content-Type") != "application/json" {
		t.Fatalf("GET unknown path = %d %v %v", status, h, body)
	}
}

func TestRolesRefuseAnOldSchema(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewEmptyPool(t)
	err := app.CheckSchema(ctx, pool)
	if err == nil || !strings.Contains(err.Error(), "run `switchboard migrate`") {
		t.Fatalf("CheckSchema on an empty database = %v", err)
	}
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if err := app.CheckSchema(ctx, pool); err != nil {
		t.Fatalf("CheckSchema after migrate = %v", err)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
