package v1alpha1

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// The CRDs' WebhookEvent enum (a kubebuilder marker) and WebhookEvents are the same list.
func TestWebhookEventEnumIsTheList(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("sender_types.go")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "// +kubebuilder:validation:Enum="
	var enum []string
	for _, line := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(line, marker); ok && strings.Contains(rest, "message.queued") {
			enum = strings.Split(rest, ";")
		}
	}
	var list []string
	for _, e := range WebhookEvents {
		list = append(list, string(e))
	}
	if !slices.Equal(enum, list) {
		t.Errorf("the WebhookEvent enum is %v, WebhookEvents %v", enum, list)
	}
}
