// Package functionbuild bundles a function's TypeScript (docs/functions-wire.md): its files,
// held in memory, compiled and bundled by esbuild's Go API into one CommonJS file for Node, with
// the module the runtime provides (@zavudev/functions, as the client's examples import it, and
// @switchboard/functions) left for the runner to supply. Bare imports of npm packages resolve
// from a node_modules directory the caller installed the function's dependencies into.
package functionbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// The client's limits on a function's source (docs/functions-wire.md §2.1).
const (
	MaxFiles = 200
	MaxBytes = 900_000
)

// RuntimeModules are the modules the runner provides: the client's examples import
// @zavudev/functions.
var RuntimeModules = []string{"@zavudev/functions", "@switchboard/functions"}

// Source is a function's code.
type Source struct {
	// Files are the sources by their path in the function's folder ("index.ts", "lib/x.ts").
	Files map[string]string
	// Entrypoint is the file the function starts from.
	Entrypoint string
	// NodeModules is the directory its dependencies are installed in; "" when it has none.
	NodeModules string
}

// Bundle is a built function.
type Bundle struct {
	// Code is the bundle: one CommonJS file.
	Code []byte
	// SHA256 is its digest, hex: the deployment's identity.
	SHA256 string
}

// Error is a build that failed: the compiler's messages, each with its file, line and column.
type Error struct {
	Messages []string
}

func (e *Error) Error() string { return "the build failed: " + strings.Join(e.Messages, "; ") }

// ErrInvalid wraps a source that cannot be built at all (limits, paths, a missing entrypoint).
var ErrInvalid = errors.New("invalid function source")

// namespace is where the function's own files live for esbuild: nowhere on disk.
const namespace = "function"

// Build checks the source against the limits and bundles it.
func Build(src Source) (Bundle, error) {
	if err := check(src); err != nil {
		return Bundle{}, err
	}
	files := map[string]string{}
	for p, c := range src.Files {
		files[path.Clean(p)] = c
	}
	plugin := api.Plugin{Name: "function-files", Setup: func(b api.PluginBuild) {
		// Relative imports (and the entrypoint) are the function's files.
		b.OnResolve(api.OnResolveOptions{Filter: `^\.{0,2}/|^[^./@][^:]*\.(ts|tsx|js|mjs|cjs|json)$`, Namespace: ""},
			func(a api.OnResolveArgs) (api.OnResolveResult, error) { return resolveFile(files, a, src.Entrypoint) })
		b.OnResolve(api.OnResolveOptions{Filter: `^\.{1,2}/`, Namespace: namespace},
			func(a api.OnResolveArgs) (api.OnResolveResult, error) { return resolveFile(files, a, src.Entrypoint) })
		b.OnLoad(api.OnLoadOptions{Filter: `.*`, Namespace: namespace}, func(a api.OnLoadArgs) (api.OnLoadResult, error) {
			contents := files[a.Path]
			return api.OnLoadResult{Contents: &contents, Loader: loaderOf(a.Path), ResolveDir: src.NodeModules}, nil
		})
	}}
	opts := api.BuildOptions{
		EntryPoints: []string{src.Entrypoint},
		Bundle:      true,
		Write:       false,
		Platform:    api.PlatformNode,
		Format:      api.FormatCommonJS,
		Engines:     []api.Engine{{Name: api.EngineNode, Version: "20"}},
		External:    RuntimeModules,
		Plugins:     []api.Plugin{plugin},
		LogLevel:    api.LogLevelSilent,
		Sourcemap:   api.SourceMapInline,
	}
	if src.NodeModules != "" {
		opts.NodePaths = []string{src.NodeModules}
	}
	res := api.Build(opts)
	if len(res.Errors) > 0 {
		return Bundle{}, &Error{Messages: messages(res.Errors)}
	}
	if len(res.OutputFiles) != 1 {
		return Bundle{}, fmt.Errorf("functionbuild: esbuild wrote %d files, want 1", len(res.OutputFiles))
	}
	code := res.OutputFiles[0].Contents
	sum := sha256.Sum256(code)
	return Bundle{Code: code, SHA256: hex.EncodeToString(sum[:])}, nil
}

// check applies the client's limits and the path rules: relative, inside the folder.
func check(src Source) error {
	if len(src.Files) == 0 {
		return fmt.Errorf("%w: a function has at least one file", ErrInvalid)
	}
	if len(src.Files) > MaxFiles {
		return fmt.Errorf("%w: %d files, at most %d", ErrInvalid, len(src.Files), MaxFiles)
	}
	total := 0
	for p, c := range src.Files {
		total += len(c)
		clean := path.Clean(p)
		if p == "" || path.IsAbs(p) || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(p, "\\") {
			return fmt.Errorf("%w: %q is not a path inside the function's folder", ErrInvalid, p)
		}
	}
	if total > MaxBytes {
		return fmt.Errorf("%w: %d bytes of source, at most %d", ErrInvalid, total, MaxBytes)
	}
	if _, ok := src.Files[src.Entrypoint]; !ok {
		return fmt.Errorf("%w: the entrypoint %q is not one of the files", ErrInvalid, src.Entrypoint)
	}
	return nil
}

// resolveFile finds an import among the files: as written, or with a source extension, or as a
// folder's index.
func resolveFile(files map[string]string, a api.OnResolveArgs, entry string) (api.OnResolveResult, error) {
	base := a.Path
	if a.Kind != api.ResolveEntryPoint {
		base = path.Join(path.Dir(a.Importer), a.Path)
	}
	base = path.Clean(base)
	candidates := []string{base}
	for _, ext := range []string{".ts", ".tsx", ".js", ".mjs", ".cjs", ".json"} {
		candidates = append(candidates, base+ext, base+"/index"+ext)
	}
	for _, c := range candidates {
		if _, ok := files[c]; ok {
			return api.OnResolveResult{Path: c, Namespace: namespace}, nil
		}
	}
	if a.Kind == api.ResolveEntryPoint && base == path.Clean(entry) {
		return api.OnResolveResult{}, fmt.Errorf("entrypoint %q not found", entry)
	}
	return api.OnResolveResult{}, fmt.Errorf("cannot find %q among the function's files", a.Path)
}

func loaderOf(p string) api.Loader {
	switch path.Ext(p) {
	case ".ts":
		return api.LoaderTS
	case ".tsx":
		return api.LoaderTSX
	case ".json":
		return api.LoaderJSON
	}
	return api.LoaderJS
}

func messages(ms []api.Message) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		s := m.Text
		if l := m.Location; l != nil {
			s = fmt.Sprintf("%s:%d:%d: %s", l.File, l.Line, l.Column+1, m.Text)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
