package app_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func TestRequestRateLimitOf601Requests(t *testing.T) {
	for name, opts := range map[string][]option{"memory": nil, "redis": {withRedis(redisURL)}} {
		t.Run(name, func(t *testing.T) {
			in := start(t, opts...)
			acme := newProject(t, in, v1alpha1.ProjectSpec{})
			other := newProject(t, in, v1alpha1.ProjectSpec{})
			key := newKey(t, in, acme, apikey.Test) // newKey's own requests count too
			otherKey := newKey(t, in, other, apikey.Test)

			used := 600 - remaining(t, in.get("/v1/me", key))
			var last response
			for i := used + 1; i <= 600; i++ {
				last = in.get("/v1/me", key)
				if last.status != 200 || last.header.Get("X-RateLimit-Limit") != "600" || remaining(t, last) != 600-i {
					t.Fatalf("request %d: %d limit %s remaining %s", i, last.status, last.header.Get("X-RateLimit-Limit"), last.header.Get("X-RateLimit-Remaining"))
				}
			}
			refused := in.get("/v1/me", key)
			if refused.status != http.StatusTooManyRequests || refused.body["code"] != "rate_limited" {
				t.Fatalf("601st request = %d %v, want 429 rate_limited", refused.status, refused.body)
			}
			reset, _ := strconv.ParseInt(refused.header.Get("X-RateLimit-Reset"), 10, 64)
			details, _ := refused.body["details"].(map[string]any)
			if retryAfter, _ := details["retryAfter"].(float64); int64(retryAfter) != reset || reset <= time.Now().UnixMilli()-1000 {
				t.Errorf("details.retryAfter %v must equal X-RateLimit-Reset %d, a time to come", details["retryAfter"], reset)
			}
			if ra, err := strconv.Atoi(refused.header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
				t.Errorf("Retry-After %q, want 1-60 seconds", refused.header.Get("Retry-After"))
			}
			if refused.header.Get("X-RateLimit-Remaining") != "0" {
				t.Errorf("X-RateLimit-Remaining on 429 = %q", refused.header.Get("X-RateLimit-Remaining"))
			}
			// Another project has its own window.
			if r := in.get("/v1/me", otherKey); r.status != 200 || r.header.Get("X-RateLimit-Limit") != "600" {
				t.Errorf("another project: %d limit %s", r.status, r.header.Get("X-RateLimit-Limit"))
			}
		})
	}
}

func remaining(t *testing.T, r response) int {
	t.Helper()
	n, err := strconv.Atoi(r.header.Get("X-RateLimit-Remaining"))
	if err != nil {
		t.Fatalf("X-RateLimit-Remaining %q", r.header.Get("X-RateLimit-Remaining"))
	}
	return n
}

func TestRequestRateFollowsTheTeamTier(t *testing.T) {
	in := start(t)
	team := "t-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	a := newProject(t, in, v1alpha1.ProjectSpec{Team: team, Verification: v1alpha1.VerificationTenDLCBrand})
	b := newProject(t, in, v1alpha1.ProjectSpec{Team: team})
	key := newKey(t, in, b, apikey.Live)
	_ = a
	waitFor(t, func() bool { return in.get("/v1/me", key).header.Get("X-RateLimit-Limit") == "2400" })
}

func TestUnreachableRedisRefusesWithRetryAfter60(t *testing.T) {
	in := start(t, withRedis("redis://127.0.0.1:1/0"))
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	secret, _, err := in.keys.Create(context.Background(), acme, "k", apikey.Test, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := in.get("/v1/me", "Bearer "+secret)
	if r.status != 429 || r.header.Get("Retry-After") != "60" || r.body["code"] != "rate_limited" {
		t.Fatalf("with Redis down: %d Retry-After %q %v", r.status, r.header.Get("Retry-After"), r.body)
	}
}

func TestPermissions(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	narrow := newKey(t, in, acme, apikey.Live, "messages:send", "contacts:read")
	if r := in.get("/v1/me", narrow); r.status != 200 {
		t.Errorf("/v1/me with a narrow key = %d, want 200 (any key)", r.status)
	}
	r := in.get("/v1/sub-accounts", narrow)
	if r.status != 403 || r.body["code"] != "forbidden" || r.header.Get("X-RateLimit-Limit") == "" {
		t.Errorf("sub-accounts with a narrow key = %d %v (rate headers %q), want 403 forbidden, counted", r.status, r.body, r.header.Get("X-RateLimit-Limit"))
	}
}

func TestSubAccounts(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{DisplayName: "Acme", Team: "acme", Plan: v1alpha1.PlanPaid})
	rival := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Live)
	rivalKey := newKey(t, in, rival, apikey.Live)
	credit(t, in, acme, "20") // what the sub-accounts' credit limits may draw on

	var ids []string
	var subKey string
	for i := 0; i < 3; i++ {
		r := in.post("/v1/sub-accounts", key, fmt.Sprintf(`{"name":"Client %d","creditLimit":500,"externalId":"ext-%d","metadata":{"tier":"gold","n":%d},"unknownField":true}`, i, i, i))
		sa, _ := r.body["subAccount"].(map[string]any)
		if r.status != 201 || sa["status"] != "active" || !strings.HasPrefix(fmt.Sprint(sa["apiKey"]), "svc_live_") || sa["externalId"] != fmt.Sprintf("ext-%d", i) {
			t.Fatalf("create sub-account = %d %v", r.status, r.body)
		}
		ids = append(ids, sa["id"].(string))
		subKey = "Bearer " + sa["apiKey"].(string)
	}

	// The sub-account's key works, as a sub-account, and cannot manage sub-accounts.
	waitFor(t, func() bool {
		r := in.get("/v1/me", subKey)
		p, _ := r.body["project"].(map[string]any)
		return r.status == 200 && p["isSubAccount"] == true
	})
	if r := in.get("/v1/me", subKey); r.body["team"].(map[string]any)["id"] != "acme" || r.body["project"].(map[string]any)["name"] != "Client 2" {
		t.Errorf("sub-account /v1/me = %v", r.body)
	}
	if r := in.get("/v1/sub-accounts", subKey); r.status != 403 {
		t.Errorf("a sub-account's key listing sub-accounts = %d, want 403", r.status)
	}

	// Pages of one, oldest first, until an empty nextCursor.
	var seen []string
	cursor := ""
	waitFor(t, func() bool { return len(in.get("/v1/sub-accounts", key).body["items"].([]any)) == 3 })
	for page := 0; page < 5; page++ {
		r := in.get("/v1/sub-accounts?limit=1&cursor="+cursor, key)
		items := r.body["items"].([]any)
		for _, it := range items {
			seen = append(seen, it.(map[string]any)["id"].(string))
		}
		cursor, _ = r.body["nextCursor"].(string)
		if cursor == "" {
			break
		}
		if page == 0 {
			// A cursor is bound to its project: another project cannot use it, nor can it be altered.
			if r := in.get("/v1/sub-accounts?cursor="+cursor, rivalKey); r.status != 400 || r.body["code"] != "invalid_request" {
				t.Errorf("another project's cursor = %d %v", r.status, r.body)
			}
			forged := []byte(cursor)
			forged[2] ^= 1
			if r := in.get("/v1/sub-accounts?cursor="+string(forged), key); r.status != 400 {
				t.Errorf("forged cursor = %d %v", r.status, r.body)
			}
		}
	}
	// Pages follow the list's order (oldest first, then by id) and hold every sub-account once.
	var all []string
	for _, it := range in.get("/v1/sub-accounts?limit=100", key).body["items"].([]any) {
		all = append(all, it.(map[string]any)["id"].(string))
	}
	if strings.Join(seen, ",") != strings.Join(all, ",") || len(all) != len(ids) {
		t.Errorf("paged through %v, want %v (created %v)", seen, all, ids)
	}
	for _, q := range []string{"limit=0", "limit=101", "limit=ten", "cursor=garbage"} {
		if r := in.get("/v1/sub-accounts?"+q, key); r.status != 400 || r.body["code"] != "invalid_request" {
			t.Errorf("?%s = %d %v", q, r.status, r.body)
		}
	}

	// Another project sees none of them.
	if r := in.get("/v1/sub-accounts", rivalKey); len(r.body["items"].([]any)) != 0 {
		t.Errorf("rival lists %v", r.body["items"])
	}
	for _, path := range []string{"/v1/sub-accounts/" + ids[0], "/v1/sub-accounts/" + ids[0] + "/api-keys"} {
		if r := in.get(path, rivalKey); r.status != 404 {
			t.Errorf("rival GET %s = %d, want 404", path, r.status)
		}
	}
	if r := in.do("PATCH", "/v1/sub-accounts/"+ids[0], rivalKey, strings.NewReader(`{"name":"mine"}`)); r.status != 404 {
		t.Errorf("rival PATCH = %d, want 404", r.status)
	}

	// Every invalid field is listed; nothing changes.
	r := in.do("PATCH", "/v1/sub-accounts/"+ids[0], key, strings.NewReader(`{"name":"","creditLimit":-1,"status":"paused"}`))
	errs := fieldErrors(r)
	if r.status != 400 || len(errs) != 3 {
		t.Errorf("invalid PATCH = %d %v, want 400 listing 3 fields", r.status, r.body)
	}
	r = in.do("PATCH", "/v1/sub-accounts/"+ids[0], key, strings.NewReader(`{"name":"Renamed","creditLimit":null,"metadata":null}`))
	sa, _ := r.body["subAccount"].(map[string]any)
	if r.status != 200 || sa["name"] != "Renamed" || sa["creditLimit"] != nil || sa["metadata"] != nil || sa["externalId"] != "ext-0" {
		t.Errorf("PATCH = %d %v", r.status, r.body)
	}

	// Keys of a sub-account.
	r = in.post("/v1/sub-accounts/"+ids[1]+"/api-keys", key, `{"name":"ci","environment":"test","permissions":["messages:send"]}`)
	created, _ := r.body["apiKey"].(map[string]any)
	if r.status != 201 || !strings.HasPrefix(fmt.Sprint(created["key"]), "svc_test_") {
		t.Fatalf("create sub-account key = %d %v", r.status, r.body)
	}
	r = in.get("/v1/sub-accounts/"+ids[1]+"/api-keys", key)
	if items := r.body["items"].([]any); r.status != 200 || len(items) != 2 || strings.Contains(string(r.raw), fmt.Sprint(created["key"])) {
		t.Errorf("list sub-account keys = %d %s", r.status, r.raw)
	}
	if r := in.do("DELETE", "/v1/sub-accounts/"+ids[1]+"/api-keys/"+fmt.Sprint(created["id"]), key, nil); r.status != 204 {
		t.Errorf("revoke sub-account key = %d", r.status)
	}
	waitFor(t, func() bool { return in.get("/v1/me", "Bearer "+fmt.Sprint(created["key"])).status == 401 })

	// Deactivation revokes the sub-account's keys.
	r = in.do("DELETE", "/v1/sub-accounts/"+ids[2], key, nil)
	if r.status != 200 || r.body["keysRevoked"] != float64(1) {
		t.Fatalf("deactivate = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool { return in.get("/v1/me", subKey).status == 401 })
	if r := in.get("/v1/sub-accounts/"+ids[2], key); r.body["subAccount"].(map[string]any)["status"] != "inactive" {
		waitFor(t, func() bool {
			return in.get("/v1/sub-accounts/"+ids[2], key).body["subAccount"].(map[string]any)["status"] == "inactive"
		})
	}
}

func TestBadBodiesChangeNothing(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Live)

	big := `{"name":"` + strings.Repeat("x", 10<<20) + `"}`
	for name, c := range map[string]struct {
		body   string
		status int
		code   string
		fields int
	}{
		"10 MB":           {big, 413, "request_too_large", 0},
		"array":           {`[]`, 400, "invalid_request", 1},
		"null":            {`null`, 400, "invalid_request", 1},
		"string":          {`"name"`, 400, "invalid_request", 1},
		"truncated":       {`{"name": "Cli`, 400, "invalid_json", 0},
		"not JSON":        {`name=Client`, 400, "invalid_json", 0},
		"empty":           {``, 400, "invalid_request", 1},
		"wrong types":     {`{"name": 5, "creditLimit": "lots", "externalId": []}`, 400, "invalid_request", 3},
		"missing name":    {`{"creditLimit": 5}`, 400, "invalid_request", 1},
		"bad values":      {`{"name": "` + strings.Repeat("n", 101) + `", "creditLimit": -5, "metadata": [1]}`, 400, "invalid_request", 3},
		"long externalId": {`{"name": "x", "externalId": "` + strings.Repeat("e", 256) + `"}`, 400, "invalid_request", 1},
	} {
		r := in.post("/v1/sub-accounts", key, c.body)
		if r.status != c.status || r.body["code"] != c.code || r.body["message"] == "" {
			t.Errorf("%s: %d %v, want %d %s", name, r.status, r.body, c.status, c.code)
			continue
		}
		if c.fields > 0 {
			errs := fieldErrors(r)
			if len(errs) != c.fields {
				t.Errorf("%s: details.errors %v, want %d entries", name, errs, c.fields)
			}
		}
	}
	time.Sleep(200 * time.Millisecond) // anything wrongly created would reach the cache by now
	if r := in.get("/v1/sub-accounts", key); len(r.body["items"].([]any)) != 0 {
		t.Errorf("bad requests created %v", r.body["items"])
	}
	if n := in.count("SELECT count(*) FROM api_keys WHERE project <> $1", acme); n != 0 {
		t.Errorf("bad requests created %d keys", n)
	}
}

func TestRevokedKeyIsRefusedByEveryReplica(t *testing.T) {
	url := pgtest.NewDatabase(t)
	replicas := []*instance{start(t, onDatabase(url)), start(t, onDatabase(url))}
	acme := newProject(t, replicas[0], v1alpha1.ProjectSpec{})
	secret, k, err := replicas[0].keys.Create(context.Background(), acme, "k", apikey.Live, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range replicas { // both replicas have the key in their caches
		waitFor(t, func() bool { return in.get("/v1/me", "Bearer "+secret).status == 200 })
	}
	revokedAt := time.Now()
	if _, err := replicas[1].keys.Revoke(context.Background(), acme, k.ID); err != nil {
		t.Fatal(err)
	}
	for i, in := range replicas {
		waitFor(t, func() bool { return in.get("/v1/me", "Bearer "+secret).status == 401 })
		t.Logf("replica %d refuses the revoked key %v after the revocation", i, time.Since(revokedAt))
	}
}
