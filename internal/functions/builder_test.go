package functions_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/functions"
	"github.com/switchboard-io/switchboard/internal/functions/npmtest"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// leftPad is the code of the left-pad the loopback registry publishes.
const leftPad = `module.exports = function leftPadFromTheRegistry(s, n) { return String(s).padStart(n) }`

// pending is a deployment inserted as the API leaves it for the builder.
type pending struct {
	id, uid     string
	version     int
	files       map[string]string
	entrypoint  string
	deps        map[string]string
	packageLock *string
}

func insert(t *testing.T, pool *pgxpool.Pool, d pending) {
	t.Helper()
	if d.version == 0 {
		d.version = 1
	}
	if d.entrypoint == "" {
		d.entrypoint = "index.ts"
	}
	if d.deps == nil {
		d.deps = map[string]string{}
	}
	files, err := json.Marshal(d.files)
	if err != nil {
		t.Fatal(err)
	}
	deps, err := json.Marshal(d.deps)
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, c := range d.files {
		size += len(c)
	}
	digest := sha256.Sum256(append(files, deps...))
	_, err = pool.Exec(context.Background(), `
		INSERT INTO function_deployments (id, project, function_uid, function_name, version, status, source, files,
		    entrypoint, dependencies, package_lock, source_bytes, source_digest, runtime, created_at, lease_until)
		VALUES ($1, 'proj', $2, 'fn-' || $2::text, $3, 'pending', 'upload', $4, $5, $6, $7, $8, $9, 'nodejs24', now(), now())`,
		d.id, d.uid, d.version, files, d.entrypoint, deps, d.packageLock, size, hex.EncodeToString(digest[:]))
	if err != nil {
		t.Fatalf("insert deployment %s: %v", d.id, err)
	}
}

// deployment is a deployment's row after the build.
type deployment struct {
	status       string
	errorMessage *string
	buildLogs    *string
	bundle       []byte
	bundleSHA256 *string
	bundleBytes  *int32
	packageLock  *string
	deployedAt   *time.Time
	leaseUntil   *time.Time
}

func load(t *testing.T, pool *pgxpool.Pool, id string) deployment {
	t.Helper()
	var d deployment
	err := pool.QueryRow(context.Background(), `
		SELECT status, error_message, build_logs, bundle, bundle_sha256, bundle_bytes, package_lock, deployed_at, lease_until
		FROM function_deployments WHERE id = $1`, id).
		Scan(&d.status, &d.errorMessage, &d.buildLogs, &d.bundle, &d.bundleSHA256, &d.bundleBytes, &d.packageLock, &d.deployedAt, &d.leaseUntil)
	if err != nil {
		t.Fatalf("read deployment %s: %v", id, err)
	}
	return d
}

func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

// buildOne runs one build and requires it to have taken a deployment.
func buildOne(t *testing.T, b *functions.Builder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	built, err := b.BuildOne(ctx)
	if err != nil {
		t.Fatalf("BuildOne: %v", err)
	}
	if !built {
		t.Fatal("BuildOne found nothing to build")
	}
}

// requireIdle requires the builder to find nothing left to build.
func requireIdle(t *testing.T, b *functions.Builder) {
	t.Helper()
	built, err := b.BuildOne(context.Background())
	if err != nil || built {
		t.Fatalf("BuildOne with nothing pending = %v, %v; want false, nil", built, err)
	}
}

func requireNPM(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not on PATH")
	}
}

func newBuilder(t *testing.T, pool *pgxpool.Pool, reg *npmtest.Registry) *functions.Builder {
	return functions.NewBuilder(pool, functions.BuilderOptions{Registry: reg.URL(), CacheDir: t.TempDir(), InstallTimeout: 2 * time.Minute})
}

// requireActive checks an active deployment's bundle and returns it.
func requireActive(t *testing.T, pool *pgxpool.Pool, id string) deployment {
	t.Helper()
	d := load(t, pool, id)
	if d.status != "active" {
		t.Fatalf("deployment %s is %s (%s), want active; logs:\n%s", id, d.status, str(d.errorMessage), str(d.buildLogs))
	}
	sum := sha256.Sum256(d.bundle)
	if len(d.bundle) == 0 || str(d.bundleSHA256) != hex.EncodeToString(sum[:]) || d.bundleBytes == nil || int(*d.bundleBytes) != len(d.bundle) {
		t.Errorf("bundle of %d bytes, bundle_sha256 %s, bundle_bytes %v: want the bundle's digest and size", len(d.bundle), str(d.bundleSHA256), d.bundleBytes)
	}
	if !strings.Contains(str(d.buildLogs), "esbuild") {
		t.Errorf("build_logs do not mention esbuild: %s", str(d.buildLogs))
	}
	if d.deployedAt == nil || d.leaseUntil != nil {
		t.Errorf("deployed_at %v, lease_until %v: want a deployment time and no lease", d.deployedAt, d.leaseUntil)
	}
	return d
}

func requireFailed(t *testing.T, pool *pgxpool.Pool, id string) deployment {
	t.Helper()
	d := load(t, pool, id)
	if d.status != "failed" {
		t.Fatalf("deployment %s is %s, want failed; logs:\n%s", id, d.status, str(d.buildLogs))
	}
	if d.errorMessage == nil || d.bundle != nil || d.bundleSHA256 != nil || d.leaseUntil != nil {
		t.Errorf("failed deployment: error_message %s, %d bytes of bundle, bundle_sha256 %s, lease_until %v: want a message, no bundle, no lease",
			str(d.errorMessage), len(d.bundle), str(d.bundleSHA256), d.leaseUntil)
	}
	return d
}

func TestBuildWithoutDependencies(t *testing.T) {
	pool := pgtest.NewPool(t)
	reg := npmtest.New(t)
	b := newBuilder(t, pool, reg)
	requireIdle(t, b) // an empty table

	insert(t, pool, pending{id: "fnd_plain", uid: "uid-plain", files: map[string]string{
		"index.ts":     "import { greet } from './lib/greet';\nexport default async (event: { name: string }) => greet(event.name);\n",
		"lib/greet.ts": "export const greet = (n: string): string => `hello, ${n} from the plain function`;\n",
	}})
	buildOne(t, b)

	d := requireActive(t, pool, "fnd_plain")
	if !strings.Contains(string(d.bundle), "from the plain function") {
		t.Errorf("the bundle lacks the function's code:\n%s", d.bundle)
	}
	if d.packageLock != nil {
		t.Errorf("package_lock = %s, want none for a function without dependencies", *d.packageLock)
	}
	if strings.Contains(str(d.buildLogs), "npm") {
		t.Errorf("a function without dependencies ran npm: %s", str(d.buildLogs))
	}
	if reg.Requests() != 0 {
		t.Errorf("the registry was asked %d times for a function without dependencies", reg.Requests())
	}
	requireIdle(t, b) // the deployment is done: nothing left
}

// TestBuildWithDependencies builds a function importing left-pad from the loopback registry, then
// a second deployment of it from the recorded lockfile, as a rollback makes: npm ci installs the
// locked version even though the registry has a newer match by then.
func TestBuildWithDependencies(t *testing.T) {
	requireNPM(t)
	pool := pgtest.NewPool(t)
	reg := npmtest.New(t)
	reg.Add("left-pad", "1.3.0", map[string]string{"index.js": leftPad})
	b := newBuilder(t, pool, reg)
	deps := map[string]string{"left-pad": "^1.3.0"}
	files := map[string]string{"index.ts": "import leftPad from 'left-pad';\nexport default async () => leftPad('x', 5);\n"}

	insert(t, pool, pending{id: "fnd_deps1", uid: "uid-deps", files: files, deps: deps})
	buildOne(t, b)

	first := requireActive(t, pool, "fnd_deps1")
	if !strings.Contains(string(first.bundle), "leftPadFromTheRegistry") {
		t.Errorf("the bundle lacks left-pad's code:\n%s", first.bundle)
	}
	if first.packageLock == nil || !strings.Contains(*first.packageLock, `"node_modules/left-pad"`) || !strings.Contains(*first.packageLock, `"1.3.0"`) {
		t.Fatalf("package_lock = %s, want a lockfile with left-pad 1.3.0", str(first.packageLock))
	}
	if !strings.Contains(str(first.buildLogs), "$ npm install") || !strings.Contains(str(first.buildLogs), "$ npm ci") {
		t.Errorf("build_logs = %s, want npm install (the lockfile) then npm ci", str(first.buildLogs))
	}
	if reg.Requests() == 0 {
		t.Error("the registry was not asked for left-pad")
	}

	// A newer left-pad matches ^1.3.0 now; the lockfile keeps 1.3.0.
	reg.Add("left-pad", "1.4.0", map[string]string{"index.js": `module.exports = function leftPadNewer(s, n) { return String(s).padStart(n) }`})
	insert(t, pool, pending{id: "fnd_deps2", uid: "uid-deps", version: 2, files: files, deps: deps, packageLock: first.packageLock})
	buildOne(t, b)

	second := requireActive(t, pool, "fnd_deps2")
	if !strings.Contains(string(second.bundle), "leftPadFromTheRegistry") || strings.Contains(string(second.bundle), "leftPadNewer") {
		t.Errorf("the second bundle is not built from the locked left-pad 1.3.0:\n%s", second.bundle)
	}
	logs := str(second.buildLogs)
	if !strings.Contains(logs, "$ npm ci") || strings.Contains(logs, "$ npm install") {
		t.Errorf("build_logs = %s, want npm ci from the recorded lockfile and no npm install", logs)
	}
	if second.packageLock == nil || !strings.Contains(*second.packageLock, `"1.3.0"`) || strings.Contains(*second.packageLock, `"1.4.0"`) {
		t.Errorf("package_lock = %s, want left-pad 1.3.0 still", str(second.packageLock))
	}
	if got := load(t, pool, "fnd_deps1").status; got != "superseded" {
		t.Errorf("the first deployment is %s, want superseded", got)
	}
	requireIdle(t, b)
}

func TestBuildSyntaxError(t *testing.T) {
	pool := pgtest.NewPool(t)
	b := newBuilder(t, pool, npmtest.New(t))
	insert(t, pool, pending{id: "fnd_syntax", uid: "uid-syntax", files: map[string]string{
		"index.ts": "export default async (event: { name: string }) => {\n  const x: number = ;\n  return x;\n};\n",
	}})
	buildOne(t, b)

	d := requireFailed(t, pool, "fnd_syntax")
	if !strings.HasPrefix(str(d.errorMessage), "the code does not compile") {
		t.Errorf("error_message = %s, want it to start with \"the code does not compile\"", str(d.errorMessage))
	}
	logs := str(d.buildLogs)
	if !strings.Contains(logs, "esbuild") || !regexp.MustCompile(`index\.ts:2:\d+: `).MatchString(logs) {
		t.Errorf("build_logs = %q, want esbuild's message at index.ts:2", logs)
	}
	requireIdle(t, b)
}

func TestBuildMissingDependency(t *testing.T) {
	requireNPM(t)
	pool := pgtest.NewPool(t)
	reg := npmtest.New(t)
	reg.Add("left-pad", "1.3.0", map[string]string{"index.js": leftPad})
	b := newBuilder(t, pool, reg)
	insert(t, pool, pending{id: "fnd_missing", uid: "uid-missing",
		files: map[string]string{"index.ts": "import x from 'no-such-package';\nexport default async () => x;\n"},
		deps:  map[string]string{"no-such-package": "^1.0.0", "left-pad": "^1.3.0"}})
	buildOne(t, b)

	d := requireFailed(t, pool, "fnd_missing")
	if msg := str(d.errorMessage); !strings.Contains(msg, "npm") {
		t.Errorf("error_message = %s, want it to mention npm", msg)
	}
	if !strings.Contains(str(d.buildLogs), reg.URL()+"/no-such-package") {
		t.Errorf("build_logs = %s, want npm's error about GET %s/no-such-package", str(d.buildLogs), reg.URL())
	}
	if d.packageLock != nil {
		t.Errorf("package_lock = %s, want none for a failed install", *d.packageLock)
	}
	if reg.Requests() == 0 {
		t.Error("the registry was never asked")
	}
	requireIdle(t, b)
}

func TestBuildRejectsPackageJSON(t *testing.T) {
	pool := pgtest.NewPool(t)
	reg := npmtest.New(t)
	b := newBuilder(t, pool, reg)
	insert(t, pool, pending{id: "fnd_pkgjson", uid: "uid-pkgjson", files: map[string]string{
		"index.ts":     "export default async () => 1;\n",
		"package.json": `{"dependencies": {"left-pad": "^1.3.0"}}`,
	}})
	buildOne(t, b)

	d := requireFailed(t, pool, "fnd_pkgjson")
	if msg := str(d.errorMessage); !strings.Contains(msg, "package.json") {
		t.Errorf("error_message = %s, want it to name package.json", msg)
	}
	if reg.Requests() != 0 {
		t.Errorf("the registry was asked %d times for a source that is not a function's", reg.Requests())
	}
	requireIdle(t, b)
}
