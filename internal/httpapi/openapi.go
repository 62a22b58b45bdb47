package httpapi

import (
	"embed"
	"fmt"
	"net/http"

	"sigs.k8s.io/yaml"
)

//go:embed openapi/*.yaml
var openAPIFiles embed.FS

// OpenAPIDocument returns the OpenAPI 3.1 description of a generation ("v1" or "v2") as JSON.
func OpenAPIDocument(generation string) ([]byte, error) {
	b, err := openAPIFiles.ReadFile("openapi/" + generation + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("read OpenAPI document %s: %w", generation, err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("convert OpenAPI document %s: %w", generation, err)
	}
	return j, nil
}

func openAPIDocuments() (map[string][]byte, error) {
	docs := map[string][]byte{}
	for _, g := range []string{"v1", "v2"} {
		d, err := OpenAPIDocument(g)
		if err != nil {
			return nil, err
		}
		docs[g] = d
	}
	return docs, nil
}

func (s *Server) openAPI(generation string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.docs[generation])
	}
}
