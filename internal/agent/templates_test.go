package agent

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/switchboard-io/switchboard/internal/apperror"
)

var (
	defineToolName = regexp.MustCompile(`defineTool\(\{\s*name:\s*"([^"]+)"`)
	envRead        = regexp.MustCompile(`process\.env\.([A-Z0-9_]+)`)
	importFrom     = regexp.MustCompile(`(?m)^import .* from "([^"]+)";$`)
	slug           = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	// toolNamePattern is AgentTool.Name's: a template's tools can become an Agent's.
	toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
)

// provisioned are the secrets a function gets without being asked: its own API key.
var provisioned = []string{"ZAVU_API_KEY"}

// TestTemplateCatalogue: each template's summary agrees with its files: toolCount is the number
// of tools index.ts defines (names a model accepts, each once); every secret it reads is
// required (its own API key aside) and every required one is read; every package it imports
// is a dependency (the functions runtime aside) and every dependency is imported; ids are
// unique slugs, categories are the client's, voice agents configure voice.
func TestTemplateCatalogue(t *testing.T) {
	t.Parallel()
	list, err := Templates()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) < 4 {
		t.Fatalf("%d templates", len(list))
	}
	ids := map[string]bool{}
	categories := map[string]bool{}
	for _, s := range list {
		if ids[s.ID] || !slug.MatchString(s.ID) {
			t.Errorf("template id %q is repeated or not a slug", s.ID)
		}
		ids[s.ID] = true
		categories[s.Category] = true
		if !slices.Contains(TemplateCategories, s.Category) {
			t.Errorf("%s: category %q is not one of %v", s.ID, s.Category, TemplateCategories)
		}
		tpl, err := TemplateByID(s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if tpl.Name != s.Name || tpl.ToolCount != s.ToolCount || tpl.Voice != s.Voice || tpl.Summary == "" || !slug.MatchString(tpl.DefaultSlug) {
			t.Errorf("%s: the summary does not match the template, or a field is empty: %+v", s.ID, s)
		}
		if len(tpl.Files) == 0 || tpl.Files[0].Path != "index.ts" {
			t.Fatalf("%s: files %v, index.ts first", s.ID, tpl.Files)
		}
		var code strings.Builder
		for _, f := range tpl.Files {
			if f.Content == "" || strings.HasPrefix(f.Path, "/") || strings.Contains(f.Path, "..") {
				t.Errorf("%s: file %q", s.ID, f.Path)
			}
			if strings.HasSuffix(f.Path, ".ts") {
				code.WriteString(f.Content)
			}
		}
		src := code.String()

		var tools []string
		for _, m := range defineToolName.FindAllStringSubmatch(src, -1) {
			if slices.Contains(tools, m[1]) || !toolNamePattern.MatchString(m[1]) || m[1] == HandoffTool {
				t.Errorf("%s: tool %q is repeated or not a name models accept", s.ID, m[1])
			}
			tools = append(tools, m[1])
		}
		if n := strings.Count(src, "defineTool("); n != len(tools) || tpl.ToolCount != n {
			t.Errorf("%s: toolCount %d, the files define %d tools (%d named: %v)", s.ID, tpl.ToolCount, n, len(tools), tools)
		}
		if strings.Count(src, "defineAgent(") != 1 {
			t.Errorf("%s: index.ts must declare one agent", s.ID)
		}

		read := map[string]bool{}
		for _, m := range envRead.FindAllStringSubmatch(src, -1) {
			read[m[1]] = true
		}
		var required []string
		for _, r := range tpl.RequiredSecrets {
			required = append(required, r.Key)
			if r.Hint == "" || !read[r.Key] {
				t.Errorf("%s: required secret %s has no hint or is never read", s.ID, r.Key)
			}
		}
		for key := range read {
			if !slices.Contains(required, key) && !slices.Contains(provisioned, key) {
				t.Errorf("%s: the files read %s, which requiredSecrets does not list", s.ID, key)
			}
		}

		imported := map[string]bool{}
		for _, m := range importFrom.FindAllStringSubmatch(src, -1) {
			imported[m[1]] = true
			if m[1] != "@zavudev/functions" && tpl.Dependencies[m[1]] == "" {
				t.Errorf("%s: imports %s, not among its dependencies", s.ID, m[1])
			}
		}
		for dep := range tpl.Dependencies {
			if !imported[dep] {
				t.Errorf("%s: dependency %s is never imported", s.ID, dep)
			}
		}
		if !imported["@zavudev/functions"] {
			t.Errorf("%s: does not import defineAgent and defineTool", s.ID)
		}

		// A voice agent configures voice, with a voice of the catalogue.
		if voices := regexp.MustCompile(`ttsVoiceId: "([^"]+)"`).FindAllStringSubmatch(src, -1); tpl.Voice != (len(voices) == 1) {
			t.Errorf("%s: voice %v, but configures %d voices", s.ID, tpl.Voice, len(voices))
		} else if tpl.Voice {
			if _, ok := VoiceByID(voices[0][1]); !ok {
				t.Errorf("%s: voice %s is not in the voice catalogue", s.ID, voices[0][1])
			}
		}
	}
	for _, c := range TemplateCategories {
		if !categories[c] {
			t.Errorf("no template of category %s", c)
		}
	}
	if !slices.IsSortedFunc(list, func(a, b TemplateSummary) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("templates are not listed by name")
	}
	if _, err := TemplateByID("fermi"); apperror.As(err) == nil || apperror.As(err).Kind != apperror.NotFound {
		t.Errorf("an unknown template: %v", err)
	}
}

func TestReadTemplatesOrdersFiles(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"t/b/template.json":     {Data: []byte(`{"id":"b","name":"Beta","category":"ops"}`)},
		"t/b/files/README.md":   {Data: []byte("read me")},
		"t/b/files/index.ts":    {Data: []byte("code")},
		"t/b/files/lib/util.ts": {Data: []byte("util")},
		"t/a/template.json":     {Data: []byte(`{"id":"a","name":"Alpha","category":"ops"}`)},
		"t/a/files/index.ts":    {Data: []byte("code")},
	}
	got, err := readTemplates(fsys, "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "a" || got[1].ID != "b" {
		t.Fatalf("templates = %+v", got)
	}
	var paths []string
	for _, f := range got[1].Files {
		paths = append(paths, f.Path)
	}
	if !slices.Equal(paths, []string{"index.ts", "README.md", "lib/util.ts"}) {
		t.Errorf("files = %v", paths)
	}
	if got[0].Dependencies == nil || got[0].RequiredSecrets == nil {
		t.Error("empty dependencies and secrets must be [] and {}, not null")
	}
	if _, err := readTemplates(fstest.MapFS{"t/x/template.json": {Data: []byte(`{`)}}, "t"); err == nil {
		t.Error("a broken template.json is not an error")
	}
}
