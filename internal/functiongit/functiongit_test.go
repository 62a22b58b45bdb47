package functiongit_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/functionbuild"
	"github.com/switchboard-io/switchboard/internal/functiongit"
	"github.com/switchboard-io/switchboard/internal/functiongit/gittest"
)

func fetch(t *testing.T, r functiongit.Repo, commit string) functiongit.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := functiongit.Fetch(ctx, r, commit)
	if err != nil {
		t.Fatalf("Fetch(%s, %q): %v", r.Branch, commit, err)
	}
	return snap
}

// fetchErr runs a Fetch that must fail and returns its *FetchError.
func fetchErr(t *testing.T, r functiongit.Repo, commit string) *functiongit.FetchError {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := functiongit.Fetch(ctx, r, commit)
	if err == nil {
		t.Fatalf("Fetch(%s, %q) succeeded: %+v", r.Branch, commit, snap)
	}
	var fe *functiongit.FetchError
	if !errors.As(err, &fe) {
		t.Fatalf("Fetch error %T %v is not a *FetchError", err, err)
	}
	if strings.Contains(fe.Reason, "\n") {
		t.Errorf("reason %q is not one line", fe.Reason)
	}
	return fe
}

func wantReason(t *testing.T, fe *functiongit.FetchError, want string) {
	t.Helper()
	if fe.Reason != want {
		t.Errorf("reason %q, want %q", fe.Reason, want)
	}
}

var botV1 = map[string]string{
	"index.ts":     "import { greet } from './lib/greet';\nexport default () => greet('v1');\n",
	"lib/greet.ts": "export const greet = (n: string) => 'hi ' + n;\n",
}

var botV2 = map[string]string{
	"index.ts":     "import { greet } from './lib/greet';\nexport default () => greet('v2');\n",
	"lib/greet.ts": "export const greet = (n: string) => 'hello ' + n;\n",
	"lib/extra.ts": "export const x = 1;\n",
}

// newBot is a server with acme/order-bot: two commits on main; it returns them, oldest first.
func newBot(t *testing.T) (*gittest.Server, functiongit.Repo, string, string) {
	srv := gittest.NewServer(t)
	v1 := srv.Commit(t, "acme/order-bot", "main", botV1, "First version\n\nWith a body.")
	v2 := srv.Commit(t, "acme/order-bot", "main", botV2, "Second version\nmore")
	r := functiongit.Repo{URL: functiongit.URLFor(srv.BaseURL, "acme", "order-bot"), Branch: "main"}
	if r.URL != srv.URL("acme/order-bot") {
		t.Fatalf("URLFor %s, server %s", r.URL, srv.URL("acme/order-bot"))
	}
	return srv, r, v1, v2
}

func TestFetchHead(t *testing.T) {
	_, r, _, v2 := newBot(t)
	snap := fetch(t, r, "")
	want := functiongit.Snapshot{Commit: v2, Message: "Second version", Files: botV2, Entrypoint: "index.ts", Dependencies: map[string]string{}}
	if !reflect.DeepEqual(snap, want) {
		t.Fatalf("snapshot\n%+v\nwant\n%+v", snap, want)
	}
	// The head named explicitly, in full or abbreviated, is the same snapshot.
	for _, c := range []string{v2, v2[:7], strings.ToUpper(v2[:12])} {
		if got := fetch(t, r, c); !reflect.DeepEqual(got, want) {
			t.Errorf("Fetch(%s): %+v", c, got)
		}
	}
	// What Fetch returns builds.
	if _, err := functionbuild.Build(functionbuild.Source{Files: snap.Files, Entrypoint: snap.Entrypoint}); err != nil {
		t.Errorf("build: %v", err)
	}
}

func TestFetchOlderCommit(t *testing.T) {
	_, r, v1, _ := newBot(t)
	for _, c := range []string{v1, v1[:7]} {
		snap := fetch(t, r, c)
		if snap.Commit != v1 || snap.Message != "First version" || !maps.Equal(snap.Files, botV1) {
			t.Errorf("Fetch(%s): %+v", c, snap)
		}
	}
}

func TestFetchCommitNotOnBranch(t *testing.T) {
	srv, r, _, _ := newBot(t)
	other := srv.Commit(t, "acme/order-bot", "feature", map[string]string{"index.ts": "export default 1;\n"}, "elsewhere")
	wantReason(t, fetchErr(t, r, other), fmt.Sprintf("commit %s is not on branch main", other))
	wantReason(t, fetchErr(t, r, "deadbeef"), "commit deadbeef is not on branch main")
	// It is on its own branch.
	r.Branch = "feature"
	if snap := fetch(t, r, other[:10]); snap.Commit != other {
		t.Errorf("feature: %+v", snap)
	}
	wantReason(t, fetchErr(t, r, "not-a-sha"), `"not-a-sha" is not a commit id`)
}

func TestFetchMissingBranch(t *testing.T) {
	_, r, _, _ := newBot(t)
	r.Branch = "release/v2"
	wantReason(t, fetchErr(t, r, ""), "branch release/v2 not found")
}

func TestFetchMissingRepository(t *testing.T) {
	srv, _, _, _ := newBot(t)
	fe := fetchErr(t, functiongit.Repo{URL: srv.URL("acme/nope"), Branch: "main"}, "")
	wantReason(t, fe, "repository not found")
	empty := srv.Repo("acme/empty")
	wantReason(t, fetchErr(t, functiongit.Repo{URL: empty.URL, Branch: "main"}, ""), "the repository is empty")
}

func TestFetchUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	fe := fetchErr(t, functiongit.Repo{URL: "http://" + addr + "/acme/bot.git", Branch: "main", Password: "tok"}, "")
	wantReason(t, fe, "the repository could not be reached: connection refused")
	if !fe.Temporary {
		t.Error("an unreachable server is temporary")
	}
}

func TestFetchTimeout(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := functiongit.Fetch(ctx, functiongit.Repo{URL: hang.URL + "/a/b.git", Branch: "main"}, "")
	var fe *functiongit.FetchError
	if !errors.As(err, &fe) || fe.Reason != "the repository could not be reached: timed out" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	_, err = functiongit.Fetch(cctx, functiongit.Repo{URL: hang.URL + "/a/b.git", Branch: "main"}, "")
	if !errors.As(err, &fe) || fe.Reason != "the fetch was cancelled" {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestFetchPrivate(t *testing.T) {
	srv, r, _, v2 := newBot(t)
	const token = "ghp_s3cr3tT0ken"
	srv.RequireAuth("x-access-token", token)

	wantReason(t, fetchErr(t, r, ""), "authentication required: the repository is private")

	bad := r
	bad.Username, bad.Password = "x-access-token", "ghp_wrongT0ken"
	fe := fetchErr(t, bad, "")
	wantReason(t, fe, "authentication failed: the credentials were refused")
	for _, text := range []string{fe.Error(), fmt.Sprintf("%+v", fe), fmt.Sprintf("%#v", fe.Unwrap())} {
		if strings.Contains(text, bad.Password) {
			t.Errorf("the error shows the credentials: %s", text)
		}
	}
	inURL := r
	inURL.URL = strings.Replace(r.URL, "http://", "http://x-access-token:ghp_wrongT0ken@", 1)
	fe = fetchErr(t, inURL, "")
	if strings.Contains(fe.Error(), "ghp_wrongT0ken") {
		t.Errorf("the error shows the credentials: %s", fe)
	}

	good := r
	good.Password = token // any user name, as GitHub takes a token
	if snap := fetch(t, good, ""); snap.Commit != v2 {
		t.Errorf("with the token: %+v", snap)
	}
	good.Username = "x-access-token"
	if snap := fetch(t, good, ""); snap.Commit != v2 {
		t.Errorf("with the token: %+v", snap)
	}
	inURL.URL = strings.Replace(r.URL, "http://", "http://x-access-token:"+token+"@", 1)
	if snap := fetch(t, inURL, ""); snap.Commit != v2 {
		t.Errorf("with the token in the URL: %+v", snap)
	}
}

func TestFetchRootDir(t *testing.T) {
	srv := gittest.NewServer(t)
	sha := srv.Commit(t, "mono", "main", map[string]string{
		"README.md":                 "# mono\n",
		"index.ts":                  "export default 'root';\n",
		"package.json":              `{"dependencies": {"left-pad": "^1.3.0"}}`,
		"services/bot/index.ts":     "import './lib/a';\nexport default 'bot';\n",
		"services/bot/lib/a.ts":     "export {};\n",
		"services/bot/package.json": `{"name": "bot", "main": "./index.ts", "dependencies": {"zod": "^3.23.0", "@acme/sdk": "1.2.3"}, "devDependencies": {"typescript": "^5"}}`,
		"services/web/index.js":     "module.exports = 1;\n",
	}, "monorepo")
	r := functiongit.Repo{URL: srv.URL("mono"), Branch: "main", RootDir: "services/bot"}
	snap := fetch(t, r, "")
	want := functiongit.Snapshot{
		Commit: sha, Message: "monorepo",
		Files:        map[string]string{"index.ts": "import './lib/a';\nexport default 'bot';\n", "lib/a.ts": "export {};\n"},
		Entrypoint:   "index.ts",
		Dependencies: map[string]string{"zod": "^3.23.0", "@acme/sdk": "1.2.3"},
	}
	if !reflect.DeepEqual(snap, want) {
		t.Fatalf("snapshot\n%+v\nwant\n%+v", snap, want)
	}
	r.RootDir = "services/nope"
	wantReason(t, fetchErr(t, r, ""), "rootDir services/nope is not a folder of the commit")
	r.RootDir = "services/bot/index.ts"
	wantReason(t, fetchErr(t, r, ""), "rootDir services/bot/index.ts is not a folder of the commit")
	r.RootDir = "../etc"
	wantReason(t, fetchErr(t, r, ""), `rootDir "../etc" is not a valid folder`)
}

func TestFetchPackageJSON(t *testing.T) {
	srv := gittest.NewServer(t)
	r := functiongit.Repo{URL: srv.URL("pkg"), Branch: "main"}
	cases := []struct {
		name   string
		files  map[string]string
		entry  string
		deps   map[string]string
		reason string
	}{
		{name: "main with ./", files: map[string]string{"index.ts": "", "src/main.ts": "", "package.json": `{"main": "./src/main.ts", "dependencies": {"zod": "^3"}}`},
			entry: "src/main.ts", deps: map[string]string{"zod": "^3"}},
		{name: "main without ./", files: map[string]string{"src/main.js": "", "package.json": `{"main": "src/main.js"}`},
			entry: "src/main.js", deps: map[string]string{}},
		{name: "main not in the files", files: map[string]string{"index.ts": "", "package.json": `{"main": "dist/index.js", "dependencies": null}`},
			entry: "index.ts", deps: map[string]string{}},
		{name: "index.ts before index.js", files: map[string]string{"index.js": "", "index.ts": ""}, entry: "index.ts", deps: map[string]string{}},
		{name: "index.js", files: map[string]string{"index.js": "", "lib/index.ts": ""}, entry: "index.js", deps: map[string]string{}},
		{name: "no entrypoint", files: map[string]string{"main.ts": "", "package.json": `{"main": "app.ts"}`},
			reason: "no entrypoint: add index.ts or set main in package.json"},
		{name: "malformed", files: map[string]string{"index.ts": "", "package.json": `{"dependencies": {`},
			reason: "package.json is not valid: unexpected end of JSON input (at byte 18)"},
		{name: "not an object", files: map[string]string{"index.ts": "", "package.json": `["zod"]`},
			reason: "package.json is not valid: it is not a JSON object"},
		{name: "dependencies not an object", files: map[string]string{"index.ts": "", "package.json": `{"dependencies": ["zod"]}`},
			reason: "package.json is not valid: dependencies is not an object"},
		{name: "version not a string", files: map[string]string{"index.ts": "", "package.json": `{"dependencies": {"zod": 3}}`},
			reason: `package.json is not valid: the version of dependency "zod" is not a string`},
		{name: "main not a string", files: map[string]string{"index.ts": "", "package.json": `{"main": 1}`},
			reason: "package.json is not valid: main is not a string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sha := srv.Commit(t, "pkg", "main", c.files, c.name)
			if c.reason != "" {
				wantReason(t, fetchErr(t, r, sha), c.reason)
				return
			}
			snap := fetch(t, r, sha)
			if snap.Entrypoint != c.entry || !reflect.DeepEqual(snap.Dependencies, c.deps) {
				t.Errorf("entrypoint %q deps %v, want %q %v", snap.Entrypoint, snap.Dependencies, c.entry, c.deps)
			}
			if _, ok := snap.Files["package.json"]; ok {
				t.Error("package.json is one of the files")
			}
		})
	}
	// A malformed package.json under rootDir is named by its path in the repository.
	srv.Commit(t, "pkg", "main", map[string]string{"svc/index.ts": "", "svc/package.json": "{"}, "nested")
	r.RootDir = "svc"
	fe := fetchErr(t, r, "")
	if !strings.HasPrefix(fe.Reason, "svc/package.json is not valid: ") {
		t.Errorf("reason %q", fe.Reason)
	}
}

func TestFetchExclusions(t *testing.T) {
	srv := gittest.NewServer(t)
	kept := map[string]string{
		"index.ts":         "export default 1;\n",
		"app.tsx":          "export const App = 1;\n",
		"lib/util.mts":     "export const u = 1;\n",
		"lib/util.cts":     "export const c = 1;\n",
		"lib/old.js":       "module.exports = 1;\n",
		"lib/esm.mjs":      "export const m = 1;\n",
		"lib/cjs.cjs":      "module.exports = 2;\n",
		"data/config.json": `{"a": 1}`,
		"testing/x.ts":     "export {};\n",
		"lib/contest.ts":   "export {};\n",
	}
	files := maps.Clone(kept)
	for p, c := range map[string]string{
		"node_modules/zod/index.js":   "module.exports = {};\n",
		"lib/node_modules/x/index.ts": "export {};\n",
		".github/workflows/ci.json":   "{}",
		".hidden/secret.ts":           "export {};\n",
		"lib/.cache/x.js":             "1",
		"package.json":                `{"dependencies": {}}`,
		"package-lock.json":           "{}",
		"lib/package.json":            "{}",
		"lib/package-lock.json":       "{}",
		"types.d.ts":                  "declare const x: number;\n",
		"lib/globals.d.mts":           "export {};\n",
		"index.test.ts":               "test();\n",
		"lib/util.spec.js":            "test();\n",
		"lib/a.test.tsx":              "test();\n",
		"README.md":                   "# readme\n",
		"Makefile":                    "all:\n",
		"style.css":                   "body{}\n",
		"lib/link.ts":                 gittest.Symlink("../index.ts"),
		"linkdir":                     gittest.Symlink("lib"),
		"lib/bin.sh":                  "#!/bin/sh\n",
		"assets/logo.TS":              "not a source by case\n",
	} {
		files[p] = c
	}
	srv.Commit(t, "ex", "main", files, "everything")
	snap := fetch(t, functiongit.Repo{URL: srv.URL("ex"), Branch: "main"}, "")
	if !maps.Equal(snap.Files, kept) {
		var got []string
		for p := range snap.Files {
			got = append(got, p)
		}
		t.Errorf("files %v, want the keys of %v", got, kept)
	}
}

func TestFetchLimits(t *testing.T) {
	srv := gittest.NewServer(t)
	r := functiongit.Repo{URL: srv.URL("big"), Branch: "main"}

	files := map[string]string{"index.ts": "export default 1;\n"}
	for i := 1; i < functionbuild.MaxFiles; i++ {
		files[fmt.Sprintf("lib/f%03d.ts", i)] = fmt.Sprintf("export const v = %d;\n", i)
	}
	files["README.md"] = "not counted"
	files["lib/f.test.ts"] = "not counted"
	srv.Commit(t, "big", "main", files, "200 files")
	if snap := fetch(t, r, ""); len(snap.Files) != functionbuild.MaxFiles {
		t.Errorf("%d files", len(snap.Files))
	}
	files["lib/one-more.ts"] = "export {};\n"
	srv.Commit(t, "big", "main", files, "201 files")
	wantReason(t, fetchErr(t, r, ""), "more than 200 files")

	half := strings.Repeat("a", functionbuild.MaxBytes/2)
	bytesFiles := map[string]string{"index.ts": half[:len(half)-10], "b.js": half, "pad.json": "\"12345678\"", "big.bin": half + half}
	srv.Commit(t, "big", "main", bytesFiles, "exactly the limit")
	snap := fetch(t, r, "")
	total := 0
	for _, c := range snap.Files {
		total += len(c)
	}
	if total != functionbuild.MaxBytes {
		t.Errorf("%d bytes", total)
	}
	bytesFiles["pad.json"] = "\"123456789\""
	srv.Commit(t, "big", "main", bytesFiles, "one byte more")
	wantReason(t, fetchErr(t, r, ""), "more than 900000 bytes of source")
	srv.Commit(t, "big", "main", map[string]string{"index.ts": "x", "huge.ts": half + half + "x"}, "one huge file")
	wantReason(t, fetchErr(t, r, ""), "more than 900000 bytes of source")
}

func TestFetchDownloadCap(t *testing.T) {
	srv := gittest.NewServer(t)
	noise := make([]byte, 64_000)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	srv.Commit(t, "heavy", "main", map[string]string{"index.ts": "export default 1;\n", "noise.bin": string(noise)}, "heavy")
	r := functiongit.Repo{URL: srv.URL("heavy"), Branch: "main"}
	if snap := fetch(t, r, ""); len(snap.Files) != 1 {
		t.Fatalf("files %v", snap.Files)
	}
	defer functiongit.SetMaxDownload(20_000)()
	wantReason(t, fetchErr(t, r, ""), "the repository is too large: more than 20000 bytes to download")

	// The head is fetched shallowly: the noise in its history is not downloaded, unless an
	// older commit is asked for.
	old := srv.Commit(t, "heavy", "main", map[string]string{"index.ts": "export default 2;\n"}, "light")
	head := srv.Commit(t, "heavy", "main", map[string]string{"index.ts": "export default 3;\n"}, "lighter")
	if snap := fetch(t, r, ""); snap.Commit != head {
		t.Fatalf("head %+v", snap)
	}
	wantReason(t, fetchErr(t, r, old), "the repository is too large: more than 20000 bytes to download")
}

func TestFetchInvalidInput(t *testing.T) {
	for _, c := range []struct {
		r      functiongit.Repo
		commit string
		reason string
	}{
		{functiongit.Repo{URL: "file:///etc/repo.git", Branch: "main"}, "", "the repository URL is not an http or https URL"},
		{functiongit.Repo{URL: "ssh://git@github.com/a/b.git", Branch: "main"}, "", "the repository URL is not an http or https URL"},
		{functiongit.Repo{URL: "https://github.com/a/b.git", Branch: "bad..branch"}, "", `branch "bad..branch" is not a valid branch name`},
		{functiongit.Repo{URL: "https://github.com/a/b.git", Branch: "main", RootDir: "/abs"}, "", `rootDir "/abs" is not a valid folder`},
		{functiongit.Repo{URL: "https://github.com/a/b.git", Branch: "main"}, "abc", `"abc" is not a commit id`},
	} {
		wantReason(t, fetchErr(t, c.r, c.commit), c.reason)
	}
}
