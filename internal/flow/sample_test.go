package flow

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// The sample Agent's flows pass the checks the API applies, so `kubectl apply` of the sample
// gives a flow that runs.
func TestSampleFlowsValidate(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "messaging_v1alpha1_agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var a v1alpha1.Agent
		if err := yaml.Unmarshal(doc, &a); err != nil || a.Kind != "Agent" {
			continue
		}
		found = len(a.Spec.Flows) > 0
		if errs := Validate(a.Spec.Flows, a.Spec.Tools); len(errs) > 0 {
			t.Fatalf("the sample's flows: %v", errs)
		}
	}
	if !found {
		t.Fatal("the sample Agent has no flow")
	}
}
