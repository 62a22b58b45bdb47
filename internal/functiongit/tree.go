package functiongit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/switchboard-io/switchboard/internal/functionbuild"
)

// sourceExts are the extensions of the files a function is made of.
var sourceExts = map[string]bool{
	".ts": true, ".tsx": true, ".mts": true, ".cts": true,
	".js": true, ".mjs": true, ".cjs": true, ".json": true,
}

// maxPackageJSON bounds the package.json Fetch parses (it is not one of the files, so the source
// limits do not cover it).
const maxPackageJSON = 1_000_000

// readCommit turns rootDir of the commit into a Snapshot.
func readCommit(st storer.EncodedObjectStorer, c *object.Commit, rootDir string) (Snapshot, error) {
	tree, err := c.Tree()
	if err != nil {
		return Snapshot{}, err
	}
	if rootDir != "" {
		for _, seg := range strings.Split(rootDir, "/") {
			e := entry(tree, seg)
			if e == nil || e.Mode != filemode.Dir {
				return Snapshot{}, failf("rootDir %s is not a folder of the commit", rootDir)
			}
			if tree, err = object.GetTree(st, e.Hash); err != nil {
				return Snapshot{}, err
			}
		}
	}
	w := &walker{st: st, files: map[string]string{}}
	if err := w.walk(tree, ""); err != nil {
		return Snapshot{}, err
	}
	snap := Snapshot{
		Commit:       c.Hash.String(),
		Message:      firstLine(c.Message),
		Files:        w.files,
		Dependencies: map[string]string{},
	}
	main := ""
	if e := entry(tree, "package.json"); e != nil && isRegular(e.Mode) {
		name := path.Join(rootDir, "package.json")
		raw, err := readBlob(st, e, maxPackageJSON)
		if err != nil {
			return Snapshot{}, err
		}
		if raw == nil {
			return Snapshot{}, failf("%s is larger than %d bytes", name, maxPackageJSON)
		}
		if snap.Dependencies, main, err = parsePackageJSON(name, raw); err != nil {
			return Snapshot{}, err
		}
	}
	switch m := path.Clean(strings.TrimPrefix(main, "./")); {
	case main != "" && hasFile(w.files, m):
		snap.Entrypoint = m
	case hasFile(w.files, "index.ts"):
		snap.Entrypoint = "index.ts"
	case hasFile(w.files, "index.js"):
		snap.Entrypoint = "index.js"
	default:
		return Snapshot{}, failf("no entrypoint: add index.ts or set main in package.json")
	}
	return snap, nil
}

func hasFile(files map[string]string, p string) bool {
	_, ok := files[p]
	return ok
}

// entry is the entry name of tree, or nil.
func entry(tree *object.Tree, name string) *object.TreeEntry {
	for i := range tree.Entries {
		if tree.Entries[i].Name == name {
			return &tree.Entries[i]
		}
	}
	return nil
}

func isRegular(m filemode.FileMode) bool {
	return m == filemode.Regular || m == filemode.Executable || m == filemode.Deprecated
}

// walker collects the source files of a tree, enforcing the limits as it goes.
type walker struct {
	st    storer.EncodedObjectStorer
	files map[string]string
	bytes int64
}

func (w *walker) walk(tree *object.Tree, prefix string) error {
	for i := range tree.Entries {
		e := &tree.Entries[i]
		if !safeName(e.Name) {
			continue
		}
		p := e.Name
		if prefix != "" {
			p = prefix + "/" + e.Name
		}
		switch {
		case e.Mode == filemode.Dir:
			if e.Name == "node_modules" || strings.HasPrefix(e.Name, ".") {
				continue
			}
			sub, err := object.GetTree(w.st, e.Hash)
			if err != nil {
				return err
			}
			if err := w.walk(sub, p); err != nil {
				return err
			}
		case isRegular(e.Mode):
			if !isSource(e.Name) {
				continue
			}
			if len(w.files) >= functionbuild.MaxFiles {
				return failf("more than %d files", functionbuild.MaxFiles)
			}
			room := functionbuild.MaxBytes - w.bytes
			content, err := readBlob(w.st, e, room)
			if err != nil {
				return err
			}
			if content == nil {
				return failf("more than %d bytes of source", functionbuild.MaxBytes)
			}
			w.bytes += int64(len(content))
			w.files[p] = string(content)
		default:
			// Symbolic links and submodules are not part of the source.
		}
	}
	return nil
}

// safeName rejects entry names no Git client writes but a crafted tree could hold.
func safeName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00")
}

// isSource: a source extension, not a declaration file, not a test, not the package files.
func isSource(name string) bool {
	if name == "package.json" || name == "package-lock.json" {
		return false
	}
	if !sourceExts[path.Ext(name)] {
		return false
	}
	for _, d := range []string{".d.ts", ".d.mts", ".d.cts"} {
		if strings.HasSuffix(name, d) {
			return false
		}
	}
	for _, pattern := range []string{"*.test.*", "*.spec.*"} {
		if ok, _ := path.Match(pattern, name); ok {
			return false
		}
	}
	return true
}

// readBlob reads the blob of e if it is at most limit bytes; nil (and no error) if it is larger.
func readBlob(st storer.EncodedObjectStorer, e *object.TreeEntry, limit int64) ([]byte, error) {
	blob, err := object.GetBlob(st, e.Hash)
	if err != nil {
		return nil, err
	}
	if blob.Size > limit {
		return nil, nil
	}
	r, err := blob.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, nil
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// parsePackageJSON reads the dependencies and main of the package.json called name.
func parsePackageJSON(name string, raw []byte) (map[string]string, string, error) {
	var pkg map[string]json.RawMessage
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return nil, "", failf("%s is not valid: %s", name, jsonReason(err))
	}
	if pkg == nil {
		return nil, "", failf("%s is not valid: it is not a JSON object", name)
	}
	deps := map[string]string{}
	if v, ok := pkg["dependencies"]; ok && string(v) != "null" {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(v, &m); err != nil {
			return nil, "", failf("%s is not valid: dependencies is not an object", name)
		}
		for dep, v := range m {
			var version string
			if err := json.Unmarshal(v, &version); err != nil {
				return nil, "", failf("%s is not valid: the version of dependency %q is not a string", name, dep)
			}
			deps[dep] = version
		}
	}
	main := ""
	if v, ok := pkg["main"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &main); err != nil {
			return nil, "", failf("%s is not valid: main is not a string", name)
		}
	}
	return deps, main, nil
}

// jsonReason is a short account of a JSON syntax error.
func jsonReason(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "it is not a JSON object"
	}
	return err.Error()
}

// firstLine is the subject of a commit message.
func firstLine(msg string) string {
	msg, _, _ = strings.Cut(msg, "\n")
	return strings.TrimRight(msg, "\r \t")
}
