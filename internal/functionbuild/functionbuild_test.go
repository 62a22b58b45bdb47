package functionbuild_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/functionbuild"
)

// The client's example function, and a helper module it imports.
var example = map[string]string{
	"index.ts": `import { defineFunction } from '@zavudev/functions';
import { greet } from './lib/greet';

export default defineFunction(async (event: { type: string }, ctx: { log: (...a: unknown[]) => void }) => {
  ctx.log('received', event.type, greet('Ana'));
});
`,
	"lib/greet.ts": `export function greet(name: string): string { return "Hello, " + name; }`,
}

// TestBuildRunsInNode: the example bundles into one CommonJS file that Node loads with a stand-in
// of the runtime module, and its handler runs.
func TestBuildRunsInNode(t *testing.T) {
	b, err := functionbuild.Build(functionbuild.Source{Files: example, Entrypoint: "index.ts"})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.SHA256) != 64 || !strings.Contains(string(b.Code), `require("@zavudev/functions")`) {
		t.Fatalf("bundle %s: %.300s", b.SHA256, b.Code)
	}
	again, err := functionbuild.Build(functionbuild.Source{Files: example, Entrypoint: "index.ts"})
	if err != nil || again.SHA256 != b.SHA256 {
		t.Errorf("a second build of the same source differs: %s %v", again.SHA256, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: run `make node`")
	}
	dir := t.TempDir()
	shim := filepath.Join(dir, "node_modules", "@zavudev", "functions")
	if err := os.MkdirAll(shim, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shim, "index.js"), []byte(`exports.defineFunction = (h) => h;`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bundle.js"), b.Code, 0o644); err != nil {
		t.Fatal(err)
	}
	run := `const f = require('./bundle.js').default; f({type: 'cron'}, {log: (...a) => console.log(a.join(' '))});`
	cmd := exec.Command(node, "-e", run)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "received cron Hello, Ana" {
		t.Errorf("node printed %q (%v)", out, err)
	}
}

// TestBuildRefusals: a compile error names its file and line; limits, paths outside the folder,
// a missing entrypoint and an import of nothing are refused.
func TestBuildRefusals(t *testing.T) {
	_, err := functionbuild.Build(functionbuild.Source{Files: map[string]string{"index.ts": "export default (;"}, Entrypoint: "index.ts"})
	var be *functionbuild.Error
	if !errors.As(err, &be) || !strings.Contains(be.Messages[0], "index.ts:1:") {
		t.Errorf("a syntax error = %v", err)
	}
	_, err = functionbuild.Build(functionbuild.Source{Files: map[string]string{"index.ts": "import x from './missing'; export default x;"}, Entrypoint: "index.ts"})
	if !errors.As(err, &be) || !strings.Contains(strings.Join(be.Messages, " "), "missing") {
		t.Errorf("an import of nothing = %v", err)
	}
	many := map[string]string{}
	for i := range functionbuild.MaxFiles + 1 {
		many[filepath.Join("f", string(rune('a'+i%26)), strings.Repeat("x", i/26+1)+".ts")] = ""
	}
	many["index.ts"] = ""
	for name, src := range map[string]functionbuild.Source{
		"too many files": {Files: many, Entrypoint: "index.ts"},
		"too many bytes": {Files: map[string]string{"index.ts": strings.Repeat("x", functionbuild.MaxBytes+1)}, Entrypoint: "index.ts"},
		"outside":        {Files: map[string]string{"index.ts": "", "../etc/passwd": ""}, Entrypoint: "index.ts"},
		"absolute":       {Files: map[string]string{"/index.ts": ""}, Entrypoint: "/index.ts"},
		"no entrypoint":  {Files: map[string]string{"main.ts": ""}, Entrypoint: "index.ts"},
		"no files":       {Entrypoint: "index.ts"},
	} {
		if _, err := functionbuild.Build(src); !errors.Is(err, functionbuild.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
