package npmtest_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1" //nolint:gosec // npm's dist.shasum is SHA-1
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/functions/npmtest"
)

const leftPad = `module.exports = (s,n)=>String(s).padStart(n)`

// npm runs the machine's npm in dir against reg, with a cache of the test's own; the test is
// skipped when there is no npm.
func npm(t *testing.T, reg *npmtest.Registry, dir, cache string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args = append(args, "--ignore-scripts", "--no-audit", "--no-fund", "--registry", reg.URL(), "--cache", cache)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func writeJSON(t *testing.T, file string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNpmInstall(t *testing.T) {
	reg := npmtest.New(t)
	reg.Add("left-pad", "1.3.0", map[string]string{"index.js": leftPad})
	dir := t.TempDir()
	writeJSON(t, filepath.Join(dir, "package.json"), map[string]any{"name": "app", "version": "1.0.0", "private": true,
		"dependencies": map[string]string{"left-pad": "^1.3.0"}})

	npm(t, reg, dir, t.TempDir(), "install")

	if got := readFile(t, filepath.Join(dir, "node_modules", "left-pad", "index.js")); got != leftPad {
		t.Errorf("node_modules/left-pad/index.js = %q, want %q", got, leftPad)
	}
	if reg.Requests() == 0 {
		t.Error("npm installed without asking the registry")
	}
}

// TestNpmInstallScopedDependenciesAndCi installs a scoped package that depends on another, picks
// the highest matching version, and installs again with npm ci from the lockfile.
func TestNpmInstallScopedDependenciesAndCi(t *testing.T) {
	reg := npmtest.New(t)
	reg.Add("left-pad", "1.2.0", map[string]string{"index.js": "module.exports = 'old'"})
	reg.Add("left-pad", "1.10.0", map[string]string{"index.js": leftPad})
	reg.Add("left-pad", "2.0.0", map[string]string{"index.js": "module.exports = 'major'"})
	reg.Add("@acme/greet", "0.1.0", map[string]string{
		"package.json": `{"name": "@acme/greet", "version": "0.1.0", "main": "lib/greet.js", "dependencies": {"left-pad": "^1.2.0"}}`,
		"lib/greet.js": `const pad = require('left-pad'); module.exports = (n) => 'hi ' + pad(n, 5)`,
	})
	dir, cache := t.TempDir(), t.TempDir()
	writeJSON(t, filepath.Join(dir, "package.json"), map[string]any{"name": "app", "version": "1.0.0", "private": true,
		"dependencies": map[string]string{"@acme/greet": "^0.1.0"}})

	npm(t, reg, dir, cache, "install")

	lock := readFile(t, filepath.Join(dir, "package-lock.json"))
	for _, want := range []string{`"node_modules/@acme/greet"`, `"node_modules/left-pad"`, `"version": "1.10.0"`} {
		if !strings.Contains(lock, want) {
			t.Errorf("package-lock.json lacks %s:\n%s", want, lock)
		}
	}
	if got := readFile(t, filepath.Join(dir, "node_modules", "left-pad", "index.js")); got != leftPad {
		t.Errorf("left-pad's index.js = %q, want 1.10.0's", got)
	}

	if err := os.RemoveAll(filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	before := reg.Requests()
	npm(t, reg, dir, t.TempDir(), "ci") // an empty cache: the tarballs come from the registry again
	if reg.Requests() <= before {
		t.Error("npm ci with an empty cache did not ask the registry")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@acme", "greet", "lib", "greet.js")); err != nil {
		t.Errorf("npm ci did not install @acme/greet: %v", err)
	}
	if node, err := exec.LookPath("node"); err == nil {
		cmd := exec.Command(node, "-e", `process.stdout.write(require('@acme/greet')('x'))`)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != "hi     x" {
			t.Errorf("require('@acme/greet')('x') = %q, %v; want %q", out, err, "hi     x")
		}
	}
}

func get(t *testing.T, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, body
}

type packument struct {
	Name     string            `json:"name"`
	DistTags map[string]string `json:"dist-tags"`
	Versions map[string]struct {
		Name         string            `json:"name"`
		Version      string            `json:"version"`
		Main         string            `json:"main"`
		Dependencies map[string]string `json:"dependencies"`
		Dist         struct {
			Tarball   string `json:"tarball"`
			Integrity string `json:"integrity"`
			Shasum    string `json:"shasum"`
		} `json:"dist"`
	} `json:"versions"`
}

func TestPackumentAndTarball(t *testing.T) {
	reg := npmtest.New(t)
	reg.Add("left-pad", "1.9.0", map[string]string{"index.js": "nine"})
	reg.Add("left-pad", "1.10.0", map[string]string{"index.js": leftPad, "lib/x.js": "x"})
	reg.Add("left-pad", "1.10.0-rc.1", map[string]string{"index.js": "rc"})

	for _, accept := range []string{"application/json", "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"} {
		res, body := get(t, reg.URL()+"/left-pad", "Accept", accept)
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("GET /left-pad (Accept %s) = %d %s: %s", accept, res.StatusCode, res.Header.Get("Content-Type"), body)
		}
		var doc packument
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Name != "left-pad" || doc.DistTags["latest"] != "1.10.0" || len(doc.Versions) != 3 {
			t.Fatalf("packument = %s; want left-pad with latest 1.10.0 and 3 versions", body)
		}
		v := doc.Versions["1.10.0"]
		if v.Name != "left-pad" || v.Version != "1.10.0" || v.Main != "index.js" {
			t.Errorf("version 1.10.0 = %+v", v)
		}
		if want := reg.URL() + "/left-pad/-/left-pad-1.10.0.tgz"; v.Dist.Tarball != want {
			t.Errorf("tarball = %s, want %s", v.Dist.Tarball, want)
		}

		res, tgz := get(t, v.Dist.Tarball)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d", v.Dist.Tarball, res.StatusCode)
		}
		sha := sha512.Sum512(tgz)
		if want := "sha512-" + base64.StdEncoding.EncodeToString(sha[:]); v.Dist.Integrity != want {
			t.Errorf("integrity = %s, want %s", v.Dist.Integrity, want)
		}
		sum := sha1.Sum(tgz) //nolint:gosec // npm's dist.shasum is SHA-1
		if want := hex.EncodeToString(sum[:]); v.Dist.Shasum != want {
			t.Errorf("shasum = %s, want %s", v.Dist.Shasum, want)
		}
		files := untar(t, tgz)
		if files["package/index.js"] != leftPad || files["package/lib/x.js"] != "x" || len(files) != 3 {
			t.Errorf("tarball holds %v", files)
		}
		var pj map[string]any
		if err := json.Unmarshal([]byte(files["package/package.json"]), &pj); err != nil {
			t.Fatalf("package/package.json: %v", err)
		}
		if pj["name"] != "left-pad" || pj["version"] != "1.10.0" || pj["main"] != "index.js" {
			t.Errorf("package/package.json = %v", pj)
		}
	}
}

func TestScopedPackage(t *testing.T) {
	reg := npmtest.New(t)
	reg.Add("@acme/greet", "1.0.0", map[string]string{
		"package.json": `{"name":"@acme/greet","version":"1.0.0","main":"greet.js","dependencies":{"left-pad":"^1.0.0"}}`,
		"greet.js":     "module.exports = 'hi'",
	})
	for _, p := range []string{"/@acme%2fgreet", "/@acme%2Fgreet", "/@acme/greet"} {
		res, body := get(t, reg.URL()+p)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d: %s", p, res.StatusCode, body)
		}
		var doc packument
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		v := doc.Versions["1.0.0"]
		if doc.Name != "@acme/greet" || v.Main != "greet.js" || v.Dependencies["left-pad"] != "^1.0.0" {
			t.Errorf("GET %s = %s", p, body)
		}
		if want := reg.URL() + "/@acme/greet/-/greet-1.0.0.tgz"; v.Dist.Tarball != want {
			t.Errorf("tarball = %s, want %s", v.Dist.Tarball, want)
		}
	}
	res, tgz := get(t, reg.URL()+"/@acme/greet/-/greet-1.0.0.tgz")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET the tarball = %d", res.StatusCode)
	}
	if files := untar(t, tgz); !strings.Contains(files["package/package.json"], `"main":"greet.js"`) {
		t.Errorf("the package.json given was not packed as it is: %v", files)
	}
}

func TestNotFoundAndFail(t *testing.T) {
	reg := npmtest.New(t)
	reg.Add("left-pad", "1.3.0", map[string]string{"index.js": leftPad})

	for _, p := range []string{"/nope", "/@acme%2fnope", "/left-pad/-/left-pad-9.9.9.tgz"} {
		res, body := get(t, reg.URL()+p)
		if res.StatusCode != http.StatusNotFound || strings.TrimSpace(string(body)) != `{"error":"Not found"}` {
			t.Errorf("GET %s = %d %s, want 404 {\"error\":\"Not found\"}", p, res.StatusCode, body)
		}
	}

	before := reg.Requests()
	reg.Fail("left-pad", http.StatusServiceUnavailable)
	if res, body := get(t, reg.URL()+"/left-pad"); res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"error"`) {
		t.Errorf("GET /left-pad after Fail = %d %s, want 503 with an error", res.StatusCode, body)
	}
	reg.Fail("left-pad", 0)
	if res, body := get(t, reg.URL()+"/left-pad"); res.StatusCode != http.StatusOK {
		t.Errorf("GET /left-pad after Fail(0) = %d %s, want 200", res.StatusCode, body)
	}
	if got := reg.Requests() - before; got != 2 {
		t.Errorf("Requests grew by %d, want 2", got)
	}
}

func untar(t *testing.T, tgz []byte) map[string]string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string]string{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = string(b)
	}
}
