package functions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/functionbuild"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// DefaultEntrypoint is the file a function starts from unless it says another.
const DefaultEntrypoint = "index.ts"

var (
	slugPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	// packageName is an npm package name, scoped or not.
	packageName = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)
	// sourceExt are the files a function's tree may hold.
	sourceExt = []string{".ts", ".tsx", ".mts", ".cts", ".js", ".mjs", ".cjs", ".json"}
)

// Draft is a function's code: its files, the one it starts from, and its npm dependencies.
type Draft struct {
	Files        map[string]string `json:"files"`
	Entrypoint   string            `json:"entrypoint"`
	Dependencies map[string]string `json:"dependencies"`
}

// Empty tells whether the draft has no code.
func (d Draft) Empty() bool { return len(d.Files) == 0 }

// Bytes is the size of the draft's files.
func (d Draft) Bytes() int {
	n := 0
	for _, c := range d.Files {
		n += len(c)
	}
	return n
}

// Digest identifies the draft's content.
func (d Draft) Digest() string {
	b, _ := json.Marshal(d) // maps marshal in key order
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Validate applies the client's rules (docs/functions-wire.md §2.1) to a draft that has files;
// field is the request field the errors name ("" for files).
func (d Draft) Validate(field string) []apperror.FieldError {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	if field == "" {
		field = "files"
	}
	if len(d.Files) > functionbuild.MaxFiles {
		bad(field, fmt.Sprintf("has %d files; a function has at most %d", len(d.Files), functionbuild.MaxFiles))
	}
	if n := d.Bytes(); n > functionbuild.MaxBytes {
		bad(field, fmt.Sprintf("holds %d bytes; a function's files hold at most %d", n, functionbuild.MaxBytes))
	}
	for _, p := range slices.Sorted(maps.Keys(d.Files)) {
		if msg := checkPath(p); msg != "" {
			bad("files."+p, msg)
		}
	}
	if len(d.Files) > 0 {
		if msg := checkPath(d.Entrypoint); msg != "" {
			bad("entrypoint", msg)
		} else if _, ok := d.Files[d.Entrypoint]; !ok {
			bad("entrypoint", fmt.Sprintf("%s is not one of the files", d.Entrypoint))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(d.Dependencies)) {
		if !packageName.MatchString(name) || len(name) > 214 {
			bad("dependencies."+name, "is not an npm package name")
		} else if slices.Contains(functionbuild.RuntimeModules, name) {
			bad("dependencies."+name, "is provided by the runtime: import it without declaring it")
		} else if v := d.Dependencies[name]; v == "" || len(v) > 200 || strings.ContainsAny(v, " \t\n") && !strings.Contains(v, "||") && !strings.Contains(v, " - ") {
			bad("dependencies."+name, "must be a semver range")
		} else if strings.Contains(v, ":") {
			bad("dependencies."+name, "must be a version range of the npm registry (no git:, file: or URL specifiers)")
		}
	}
	if len(d.Dependencies) > 100 {
		bad("dependencies", "a function has at most 100 dependencies")
	}
	return errs
}

// checkPath says what is wrong with a file's path ("" when nothing).
func checkPath(p string) string {
	switch {
	case p == "":
		return "a path is required"
	case len(p) > 200:
		return "a path has at most 200 characters"
	case strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.HasPrefix(p, "./"):
		return "must be a relative path with forward slashes"
	case path.Clean(p) != p:
		return "must be a clean path (no empty, . or .. segments)"
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "must stay inside the function's folder"
		}
		if seg == "node_modules" {
			return "node_modules/ is not part of a function: declare packages in dependencies"
		}
	}
	if path.Base(p) == "package.json" {
		return "package.json is not part of a function: declare packages in dependencies"
	}
	if !slices.Contains(sourceExt, path.Ext(p)) {
		return "must be a .ts, .tsx, .mts, .cts, .js, .mjs, .cjs or .json file"
	}
	return ""
}

// DraftEdit is what a request says of the draft; unset fields keep the draft's.
type DraftEdit struct {
	Files        map[string]string
	SourceCode   *string
	Entrypoint   *string
	Dependencies map[string]string
	// DependenciesSet: the request named dependencies (nil Dependencies: it set none).
	DependenciesSet bool
}

// Changes tells whether the edit changes anything.
func (e DraftEdit) Changes() bool {
	return e.Files != nil || e.SourceCode != nil || e.Entrypoint != nil || e.DependenciesSet
}

// firstPath is the field an error about the edited draft names.
func (e DraftEdit) firstPath() string {
	switch {
	case e.Files != nil:
		return "files"
	case e.SourceCode != nil:
		return "sourceCode"
	case e.Entrypoint != nil:
		return "entrypoint"
	}
	return "dependencies"
}

// On applies the edit to cur: files replace the whole tree (and win over sourceCode, which is
// one file named after the entrypoint); dependencies replace the map.
func (e DraftEdit) On(cur Draft) Draft {
	out := Draft{Files: cur.Files, Entrypoint: cur.Entrypoint, Dependencies: cur.Dependencies}
	if e.Entrypoint != nil {
		out.Entrypoint = *e.Entrypoint
	}
	if out.Entrypoint == "" {
		out.Entrypoint = DefaultEntrypoint
	}
	switch {
	case e.Files != nil:
		out.Files = e.Files
	case e.SourceCode != nil:
		out.Files = map[string]string{out.Entrypoint: *e.SourceCode}
	}
	if e.DependenciesSet {
		out.Dependencies = e.Dependencies
	}
	if out.Files == nil {
		out.Files = map[string]string{}
	}
	if out.Dependencies == nil {
		out.Dependencies = map[string]string{}
	}
	return out
}

// Draft returns the function's draft: its spec.source when declared there, else the API's.
func (s *Service) Draft(ctx context.Context, f *v1alpha1.Function) (Draft, error) {
	if src := f.Spec.Source; src != nil && src.Files != nil {
		return (DraftEdit{Files: src.Files, Entrypoint: &src.Entrypoint, Dependencies: src.Dependencies, DependenciesSet: true}).On(Draft{}), nil
	}
	row, err := db.Planned(s.pool).FunctionDraft(ctx, string(f.UID))
	if errors.Is(err, pgx.ErrNoRows) {
		return DraftEdit{}.On(Draft{}), nil
	}
	if err != nil {
		return Draft{}, fmt.Errorf("read the draft of function %s: %w", f.Name, err)
	}
	return draftOf(row.Files, row.Entrypoint, row.Dependencies)
}

// Dependencies are the npm packages of the function's draft (its spec.source's when declared
// there), read without its files.
func (s *Service) Dependencies(ctx context.Context, f *v1alpha1.Function) (map[string]string, error) {
	deps := map[string]string{}
	if src := f.Spec.Source; src != nil && src.Files != nil {
		maps.Copy(deps, src.Dependencies)
		return deps, nil
	}
	raw, err := db.Planned(s.pool).FunctionDraftDependencies(ctx, string(f.UID))
	if errors.Is(err, pgx.ErrNoRows) {
		return deps, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the dependencies of function %s: %w", f.Name, err)
	}
	if err := json.Unmarshal(raw, &deps); err != nil {
		return nil, fmt.Errorf("decode the dependencies of function %s: %w", f.Name, err)
	}
	return deps, nil
}

func draftOf(files []byte, entrypoint string, deps []byte) (Draft, error) {
	d := Draft{Entrypoint: entrypoint}
	if err := json.Unmarshal(files, &d.Files); err != nil {
		return Draft{}, fmt.Errorf("decode files: %w", err)
	}
	if err := json.Unmarshal(deps, &d.Dependencies); err != nil {
		return Draft{}, fmt.Errorf("decode dependencies: %w", err)
	}
	return DraftEdit{}.On(d), nil
}

func (s *Service) saveDraft(ctx context.Context, f *v1alpha1.Function, d Draft) error {
	d = DraftEdit{}.On(d)
	files, err := json.Marshal(d.Files)
	if err != nil {
		return err
	}
	deps, err := json.Marshal(d.Dependencies)
	if err != nil {
		return err
	}
	err = db.Planned(s.pool).UpsertFunctionDraft(ctx, db.UpsertFunctionDraftParams{FunctionUid: string(f.UID), Project: f.Namespace,
		FunctionName: f.Name, Files: files, Entrypoint: d.Entrypoint, Dependencies: deps, Now: s.now().UTC()})
	if err != nil {
		return fmt.Errorf("save the draft of function %s: %w", f.Name, err)
	}
	return nil
}
