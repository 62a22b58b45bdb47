package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/localredis"
	"github.com/switchboard-io/switchboard/internal/postgres"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/tendlc"
)

var (
	testEnv  *envtest.Environment
	redisURL string
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard()) // each test logs through testr instead
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	if _, err := testEnv.Start(); err != nil {
		panic("start envtest (KUBEBUILDER_ASSETS; `make test` sets it): " + err.Error())
	}
	rs, err := localredis.Start(context.Background(), localredis.URLFromEnv())
	if err != nil {
		_ = testEnv.Stop()
		panic(err)
	}
	redisURL = rs.URL
	code := pgtest.Run(m)
	rs.Stop()
	_ = testEnv.Stop()
	os.Exit(code)
}

// newProject creates a namespace with a Project and returns the namespace (the project id). The
// project has an approved 10DLC campaign in both modes, so its SMS to the sandbox's and Twilio's
// +1 test numbers go; newUnregisteredProject has none.
func newProject(t testing.TB, in *instance, spec v1alpha1.ProjectSpec) string {
	t.Helper()
	ns := newUnregisteredProject(t, in, spec)
	for _, testMode := range []bool{true, false} {
		if err := tendlc.SeedApproved(context.Background(), in.db, ns, testMode); err != nil {
			t.Fatal(err)
		}
	}
	return ns
}

// newUnregisteredProject is newProject without 10DLC registrations.
func newUnregisteredProject(t testing.TB, in *instance, spec v1alpha1.ProjectSpec) string {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "p-"}}
	if err := in.k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	p := &v1alpha1.Project{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "project"}, Spec: spec}
	if err := in.k8s.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// newKey creates a key of project and waits until the API sees the project.
func newKey(t testing.TB, in *instance, project string, env apikey.Environment, permissions ...string) string {
	t.Helper()
	secret, _, err := in.keys.Create(context.Background(), project, "test", env, permissions)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		r := in.get("/v1/me", "Bearer "+secret)
		name, _ := r.body["project"].(map[string]any)
		return r.status == 200 && name["id"] == project
	})
	return "Bearer " + secret
}

func TestHealthAndReadiness(t *testing.T) {
	in := start(t)
	for _, path := range []string{"/healthz", "/readyz", "/readyz/postgres", "/readyz/informers"} {
		if r := in.get(path, ""); r.status != 200 {
			t.Errorf("GET %s = %d, want 200", path, r.status)
		}
	}
}

func TestMeTellsWhoTheKeyIs(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{DisplayName: "Acme", Team: "acme-team"})
	sub := newProject(t, in, v1alpha1.ProjectSpec{Parent: acme})
	secret, stored, err := in.keys.Create(context.Background(), acme, "backend", apikey.Live, nil)
	if err != nil {
		t.Fatal(err)
	}
	var me map[string]any
	waitFor(t, func() bool { // the informer cache sees the new Project shortly after it is created
		r := in.get("/v1/me", "Bearer "+secret)
		me = r.body
		return r.status == 200 && me["project"].(map[string]any)["name"] != nil
	})
	want := map[string]any{
		"apiKey":     map[string]any{"id": stored.ID},
		"isTestMode": false,
		"project":    map[string]any{"id": acme, "isSubAccount": false, "name": "Acme", "totalSpent": 0.0},
		"team":       map[string]any{"id": "acme-team", "name": nil},
	}
	if !jsonEqual(me, want) {
		t.Fatalf("GET /v1/me = %v, want %v", me, want)
	}
	subKey := newKey(t, in, sub, apikey.Test)
	r := in.get("/v1/me", subKey)
	if p := r.body["project"].(map[string]any); p["isSubAccount"] != true || r.body["isTestMode"] != true {
		t.Errorf("sub-account's /v1/me = %v", r.body)
	}
	// The worker records the use, off the request's path.
	waitFor(t, func() bool {
		return in.count("SELECT count(*) FROM api_keys WHERE id = $1 AND last_used_at IS NOT NULL", stored.ID) == 1
	})
}

func TestBadKeysGetUnauthorizedAndChangeNothing(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	revoked, k, err := in.keys.Create(context.Background(), acme, "old", apikey.Live, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.keys.Revoke(context.Background(), acme, k.ID); err != nil {
		t.Fatal(err)
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
		for _, path := range []string{"/v1/me", "/v1/sub-accounts", "/v1/no-such-thing", "/v2/no-such-thing"} {
			r := in.get(path, auth)
			if r.status != 401 || r.body["code"] != "unauthorized" || r.body["message"] == "" {
				t.Errorf("%s: GET %s = %d %v, want 401 {code: unauthorized, message}", name, path, r.status, r.body)
			}
			if r.header.Get("X-RateLimit-Limit") != "" {
				t.Errorf("%s: an unauthenticated answer counts against no project, yet carries rate-limit headers", name)
			}
		}
	}
	// The sandbox's periodic catch-up is enqueued by the elected leader on its own clock.
	if n := in.count("SELECT count(*) FROM river_job WHERE kind <> 'message.sandbox_catch_up'"); n != 0 {
		t.Errorf("refused requests enqueued %d jobs, want none", n)
	}
	if n := in.count("SELECT count(*) FROM api_keys WHERE last_used_at IS NOT NULL"); n != 0 {
		t.Errorf("refused requests touched %d keys, want none", n)
	}
}

func TestUnknownPathsAndWrongMethods(t *testing.T) {
	in := start(t)
	key := newKey(t, in, newProject(t, in, v1alpha1.ProjectSpec{}), apikey.Test)
	for _, c := range []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{"GET", "/v1/no-such-thing", 404, "not_found", ""},
		{"GET", "/v2/no-such-thing", 404, "not_found", ""},
		{"GET", "/nowhere", 404, "not_found", ""},
		{"POST", "/v1/me", 405, "method_not_allowed", "GET"},
		{"DELETE", "/v1/sub-accounts", 405, "method_not_allowed", "POST, GET"},
		{"POST", "/v2/openapi.json", 405, "method_not_allowed", "GET"},
	} {
		r := in.do(c.method, c.path, key, nil)
		if r.status != c.status || r.body["code"] != c.code || r.header.Get("Allow") != c.allow {
			t.Errorf("%s %s = %d %v (Allow %q), want %d %s (Allow %q)", c.method, c.path, r.status, r.body, r.header.Get("Allow"), c.status, c.code, c.allow)
		}
	}
}

func TestOpenAPIDocuments(t *testing.T) {
	in := start(t)
	for g, version := range map[string]string{"v1": "0.2.0", "v2": "2.0.0"} {
		r := in.get("/"+g+"/openapi.json", "")
		info, _ := r.body["info"].(map[string]any)
		if r.status != 200 || r.body["openapi"] != "3.1.0" || info["version"] != version {
			t.Errorf("GET /%s/openapi.json = %d openapi %v version %v", g, r.status, r.body["openapi"], info["version"])
		}
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
