package agent

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/switchboard-io/switchboard/internal/apperror"
)

// Template is a factory agent (GET /v1/agent-templates/{id}): the files of a Function that
// declares the agent with defineAgent and its tools with defineTool, what `agents pull` writes
// before a deploy, with the npm packages and the secrets it needs. Functions come with a later
// issue: until then the files are a starting point to read and adapt.
type Template struct {
	ID              string            `json:"id"`
	Name            string            `json:"name"`
	Summary         string            `json:"summary"`
	Category        string            `json:"category"`
	DefaultSlug     string            `json:"defaultSlug"`
	Voice           bool              `json:"voice"`
	ToolCount       int               `json:"toolCount"`
	Dependencies    map[string]string `json:"dependencies"`
	RequiredSecrets []RequiredSecret  `json:"requiredSecrets"`
	Files           []TemplateFile    `json:"files"`
}

// TemplateSummary is a template's entry in the list.
type TemplateSummary struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Summary   string `json:"summary"`
	Category  string `json:"category"`
	ToolCount int    `json:"toolCount"`
	Voice     bool   `json:"voice"`
}

// RequiredSecret is a secret the template's function reads (process.env.<Key>).
type RequiredSecret struct {
	Key  string `json:"key"`
	Hint string `json:"hint"`
}

// TemplateFile is a file to write verbatim, at Path relative to the function's folder.
type TemplateFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// TemplateCategories are the client's template categories.
var TemplateCategories = []string{"sales", "support", "frontDesk", "ops"}

// The catalogue: catalog/templates/<dir>/template.json describes a template, and every file
// under catalog/templates/<dir>/files/ is one of its files.
//
//go:embed catalog/templates
var templateFS embed.FS

const templateRoot = "catalog/templates"

var templateCatalog = sync.OnceValues(func() ([]Template, error) { return readTemplates(templateFS, templateRoot) })

// readTemplates reads the catalogue under root of fsys, sorted by name.
func readTemplates(fsys fs.FS, root string) ([]Template, error) {
	dirs, err := fs.ReadDir(fsys, root)
	if err != nil {
		return nil, fmt.Errorf("read the template catalogue: %w", err)
	}
	var out []Template
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		dir := path.Join(root, d.Name())
		raw, err := fs.ReadFile(fsys, path.Join(dir, "template.json"))
		if err != nil {
			return nil, fmt.Errorf("read template %s: %w", d.Name(), err)
		}
		var t Template
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("read template %s: %w", d.Name(), err)
		}
		files := path.Join(dir, "files")
		err = fs.WalkDir(fsys, files, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			content, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			t.Files = append(t.Files, TemplateFile{Path: strings.TrimPrefix(p, files+"/"), Content: string(content)})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read the files of template %s: %w", d.Name(), err)
		}
		// index.ts first: it is the function's entry point.
		slices.SortStableFunc(t.Files, func(a, b TemplateFile) int {
			switch {
			case a.Path == "index.ts":
				return -1
			case b.Path == "index.ts":
				return 1
			}
			return strings.Compare(a.Path, b.Path)
		})
		if t.Dependencies == nil {
			t.Dependencies = map[string]string{}
		}
		if t.RequiredSecrets == nil {
			t.RequiredSecrets = []RequiredSecret{}
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Template) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Templates lists the catalogue's templates, by name.
func Templates() ([]TemplateSummary, error) {
	all, err := templateCatalog()
	if err != nil {
		return nil, err
	}
	out := make([]TemplateSummary, len(all))
	for i, t := range all {
		out[i] = TemplateSummary{ID: t.ID, Name: t.Name, Summary: t.Summary, Category: t.Category, ToolCount: t.ToolCount, Voice: t.Voice}
	}
	return out, nil
}

// TemplateByID returns the template id with its files; 404 when there is none.
func TemplateByID(id string) (Template, error) {
	all, err := templateCatalog()
	if err != nil {
		return Template{}, err
	}
	for _, t := range all {
		if t.ID == id {
			return t, nil
		}
	}
	return Template{}, apperror.NotFoundf("No agent template %s.", id)
}
