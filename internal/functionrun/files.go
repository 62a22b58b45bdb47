package functionrun

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The runner script and the runtime module, written into every deployment's folder.
var (
	//go:embed runner.js
	runnerJS []byte
	//go:embed functions.js
	functionsJS []byte
)

// runtimeModules are the names functions.js is served under (functionbuild.RuntimeModules).
var runtimeModules = []string{"@zavudev/functions", "@switchboard/functions"}

// writeDeployment lays out a deployment's folder: bundle.js, runner.js and the runtime module
// under node_modules. Each file is written beside its place and renamed into it, so a reader
// never sees half a file.
func writeDeployment(dir string, bundle []byte) error {
	files := map[string][]byte{
		"bundle.js": bundle,
		"runner.js": runnerJS,
	}
	for _, m := range runtimeModules {
		pkg := fmt.Sprintf(`{"name":%q,"version":"1.0.0","main":"index.js"}`+"\n", m)
		files[filepath.Join("node_modules", m, "package.json")] = []byte(pkg)
		files[filepath.Join("node_modules", m, "index.js")] = functionsJS
	}
	for name, content := range files {
		if err := writeAtomic(filepath.Join(dir, name), content); err != nil {
			return err
		}
	}
	return nil
}

func writeAtomic(path string, content []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(content)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
