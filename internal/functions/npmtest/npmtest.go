// Package npmtest serves a loopback npm registry for tests: an httptest.Server bound to
// 127.0.0.1 that speaks enough of the registry protocol for `npm install` and `npm ci`, its
// packuments at /<name> and its tarballs at /<name>/-/<base>-<version>.tgz, with the packages a
// test publishes with Add.
//
// It serves the full packument whether npm asks for it or for the abbreviated, "corgi" form
// (Accept: application/vnd.npm.install-v1+json): the abbreviated form is a subset. Only the
// standard library is used; the tarballs are built in memory.
package npmtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1" //nolint:gosec // npm's dist.shasum is SHA-1
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	// packageName is an npm package name, scoped or not.
	packageName = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)
	// semverPattern is a semantic version (https://semver.org), without a leading v.
	semverPattern = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$`)
)

// tarballTime is the modification time of the tarballs' entries: npm pack's fixed date, so a
// package's tarball (and its integrity) depends on its files only.
var tarballTime = time.Date(1985, time.October, 26, 8, 15, 0, 0, time.UTC)

// Registry is a loopback npm registry.
type Registry struct {
	tb  testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	packages map[string]*pkg // by name
	tarballs map[string][]byte
	fails    map[string]int // package name → status its packument answers
	requests int
}

// pkg is a published package.
type pkg struct {
	versions map[string]version
	times    map[string]time.Time
	created  time.Time
	modified time.Time
}

// version is a published version: its manifest (package.json plus dist) and tarball path.
type version struct {
	manifest map[string]any
	tarball  string // path on the server, "/left-pad/-/left-pad-1.3.0.tgz"
}

// New starts a registry with no packages; it is closed when the test ends.
func New(tb testing.TB) *Registry {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("npmtest: listen on 127.0.0.1: %v", err)
	}
	r := &Registry{tb: tb, packages: map[string]*pkg{}, tarballs: map[string][]byte{}, fails: map[string]int{}}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.srv.Listener.Close()
	r.srv.Listener = l
	r.srv.Start()
	tb.Cleanup(r.srv.Close)
	return r
}

// URL is the registry's root, "http://127.0.0.1:port", for npm's --registry.
func (r *Registry) URL() string { return r.srv.URL }

// Requests is how many HTTP requests the registry has answered (packuments, tarballs, and
// anything else npm asked for).
func (r *Registry) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// Fail makes the packument of package name answer status (with the registry's JSON error body)
// from now on, whether or not the package was added; status 0 (or 200) serves it again.
func (r *Registry) Fail(name string, status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if status == 0 || status == http.StatusOK {
		delete(r.fails, name)
		return
	}
	r.fails[name] = status
}

// Add publishes version of package name with files, by their path inside the package
// ("index.js", "lib/util.js"). Unless files has a package.json, one is added with the name,
// the version and main "index.js"; one the files have is packed as it is, and the version's
// manifest in the packument is its content (dependencies, bin, …) with the given name and
// version, as the registry's is the published package.json. Adding a version again replaces it. Add fails the test on a name, version or path npm
// would not accept, so call it from the test's goroutine.
func (r *Registry) Add(name, ver string, files map[string]string) {
	r.tb.Helper()
	if !packageName.MatchString(name) || len(name) > 214 {
		r.tb.Fatalf("npmtest: %q is not an npm package name", name)
	}
	if !semverPattern.MatchString(ver) {
		r.tb.Fatalf("npmtest: %q is not a semantic version", ver)
	}
	manifest := map[string]any{}
	if raw, ok := files["package.json"]; ok {
		if err := json.Unmarshal([]byte(raw), &manifest); err != nil {
			r.tb.Fatalf("npmtest: package.json of %s@%s: %v", name, ver, err)
		}
		if manifest == nil {
			r.tb.Fatalf("npmtest: package.json of %s@%s is not an object", name, ver)
		}
	} else {
		manifest["main"] = "index.js"
	}
	manifest["name"], manifest["version"] = name, ver
	all := maps.Clone(files)
	if all == nil {
		all = map[string]string{}
	}
	if _, ok := all["package.json"]; !ok {
		pj, err := json.MarshalIndent(manifest, "", "  ")
		if err != nil {
			r.tb.Fatalf("npmtest: package.json of %s@%s: %v", name, ver, err)
		}
		all["package.json"] = string(pj) + "\n"
	}
	for p := range all {
		if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "\\") {
			r.tb.Fatalf("npmtest: %q in %s@%s is not a clean relative path", p, name, ver)
		}
	}
	tgz, err := tarball(all)
	if err != nil {
		r.tb.Fatalf("npmtest: pack %s@%s: %v", name, ver, err)
	}
	sha := sha512.Sum512(tgz)
	sum := sha1.Sum(tgz) //nolint:gosec // npm's dist.shasum is SHA-1
	base := name[strings.LastIndex(name, "/")+1:]
	tarPath := "/" + name + "/-/" + base + "-" + ver + ".tgz"
	manifest["_id"] = name + "@" + ver
	if _, ok := all["npm-shrinkwrap.json"]; !ok {
		manifest["_hasShrinkwrap"] = false
	}
	manifest["dist"] = map[string]any{
		"integrity":    "sha512-" + base64.StdEncoding.EncodeToString(sha[:]),
		"shasum":       hex.EncodeToString(sum[:]),
		"tarball":      r.srv.URL + tarPath,
		"fileCount":    len(all),
		"unpackedSize": unpackedSize(all),
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now().UTC()
	p := r.packages[name]
	if p == nil {
		p = &pkg{versions: map[string]version{}, times: map[string]time.Time{}, created: now}
		r.packages[name] = p
	}
	if old, ok := p.versions[ver]; ok {
		delete(r.tarballs, old.tarball)
	}
	p.versions[ver] = version{manifest: manifest, tarball: tarPath}
	p.times[ver], p.modified = now, now
	r.tarballs[tarPath] = tgz
}

func unpackedSize(files map[string]string) int {
	n := 0
	for _, c := range files {
		n += len(c)
	}
	return n
}

// tarball packs files as npm does: a gzipped tar whose entries are under package/.
func tarball(files map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, p := range slices.Sorted(maps.Keys(files)) {
		c := files[p]
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: "package/" + p, Mode: 0o644, Size: int64(len(c)),
			ModTime: tarballTime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(c)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// serve answers a packument, a tarball, or the registry's 404.
func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests++
	r.mu.Unlock()
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		writeError(w, http.StatusMethodNotAllowed, "Method not allowed")
		return
	}
	// The path is unescaped: a scoped name asked for as /@scope%2fname reads /@scope/name.
	p := req.URL.Path
	if strings.Contains(p, "/-/") {
		r.serveTarball(w, req, p)
		return
	}
	r.servePackument(w, req, strings.TrimPrefix(p, "/"))
}

func (r *Registry) serveTarball(w http.ResponseWriter, req *http.Request, p string) {
	r.mu.Lock()
	tgz, ok := r.tarballs[p]
	r.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "Not found")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(tgz)))
	w.WriteHeader(http.StatusOK)
	if req.Method == http.MethodGet {
		_, _ = w.Write(tgz)
	}
}

func (r *Registry) servePackument(w http.ResponseWriter, req *http.Request, name string) {
	r.mu.Lock()
	status, failing := r.fails[name]
	var body []byte
	var err error
	p := r.packages[name]
	if !failing && p != nil {
		body, err = json.Marshal(packument(name, p))
	}
	r.mu.Unlock()
	switch {
	case failing:
		writeError(w, status, http.StatusText(status))
		return
	case p == nil:
		writeError(w, http.StatusNotFound, "Not found")
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	// Accept: application/vnd.npm.install-v1+json asks for the abbreviated packument, a subset
	// of the full one: both get the full one.
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if req.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

// packument is a package's document; call with r.mu held.
func packument(name string, p *pkg) map[string]any {
	versions := map[string]any{}
	times := map[string]string{
		"created":  p.created.Format(time.RFC3339Nano),
		"modified": p.modified.Format(time.RFC3339Nano),
	}
	latest := ""
	for v, m := range p.versions {
		versions[v] = m.manifest
		times[v] = p.times[v].Format(time.RFC3339Nano)
		if latest == "" || compareSemver(v, latest) > 0 {
			latest = v
		}
	}
	return map[string]any{
		"_id":       name,
		"name":      name,
		"dist-tags": map[string]string{"latest": latest},
		"versions":  versions,
		"time":      times,
		"modified":  times["modified"],
	}
}

// writeError answers as the registry does: {"error": "..."}.
func writeError(w http.ResponseWriter, status int, msg string) {
	body, _ := json.Marshal(map[string]string{"error": msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// compareSemver orders two valid semantic versions by precedence: -1, 0 or 1.
func compareSemver(a, b string) int {
	ma, mb := semverPattern.FindStringSubmatch(a), semverPattern.FindStringSubmatch(b)
	for i := 1; i <= 3; i++ {
		x, _ := strconv.ParseUint(ma[i], 10, 64)
		y, _ := strconv.ParseUint(mb[i], 10, 64)
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch pa, pb := ma[4], mb[4]; {
	case pa == pb:
		return 0
	case pa == "": // a release ranks above its prereleases
		return 1
	case pb == "":
		return -1
	default:
		return comparePrerelease(strings.Split(pa, "."), strings.Split(pb, "."))
	}
}

func comparePrerelease(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, errX := strconv.ParseUint(a[i], 10, 64)
		y, errY := strconv.ParseUint(b[i], 10, 64)
		numX, numY := errX == nil, errY == nil
		switch {
		case numX && numY:
			if x != y {
				if x < y {
					return -1
				}
				return 1
			}
		case numX: // numeric identifiers rank below alphanumeric ones
			return -1
		case numY:
			return 1
		default:
			if c := strings.Compare(a[i], b[i]); c != 0 {
				return c
			}
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}
