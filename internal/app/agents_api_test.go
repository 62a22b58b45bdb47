package app_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
)

// TestAgentsThroughTheAPI: the v1 agent operations write Agent resources (the key to the
// agent's own Secret, never shown), keep one agent per sender and the primary sender with its
// agent, and refuse bad input with every field named, changing nothing.
func TestAgentsThroughTheAPI(t *testing.T) {
	in := start(t, fastSandbox)
	acme, key := sendingProject(t, in, nil, apikey.Live)
	ctx := context.Background()
	agents := func() int {
		var list v1alpha1.AgentList
		_ = in.k8s.List(ctx, &list, client.InNamespace(acme))
		return len(list.Items)
	}

	// Bad input first: all missing fields at once, bounds, enum; nothing made.
	r := in.post("/v1/agents", key, `{"temperature":3,"maxTokens":0,"provider":"cohere","contextWindowMessages":101}`)
	if r.status != 400 {
		t.Fatalf("bad create = %d %v", r.status, r.body)
	}
	for _, field := range []string{"name", "model", "systemPrompt", "provider", "temperature", "maxTokens", "contextWindowMessages"} {
		if !strings.Contains(toJSON(r.body), `"path":"`+field+`"`) {
			t.Errorf("the refusal does not name %s: %v", field, r.body)
		}
	}
	if r := in.post("/v1/senders/main/agent", key, `{"name":"S","provider":"openai","model":"gpt-4o-mini","systemPrompt":"Hi."}`); r.status != 400 ||
		!strings.Contains(toJSON(r.body), "apiKey") {
		t.Errorf("a sender's agent without a key = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/senders/nosuch/agent", key, `{"name":"S","provider":"zavu","model":"m","systemPrompt":"Hi."}`); r.status != 404 {
		t.Errorf("an agent on a missing sender = %d", r.status)
	}
	if n := agents(); n != 0 {
		t.Fatalf("refused requests made %d agents", n)
	}

	// The sender's agent: enabled, answering on it; its key in its own Secret, never shown.
	r = in.post("/v1/senders/main/agent", key, `{"name":"Support","provider":"openai","model":"gpt-4o-mini","systemPrompt":"Help.","apiKey":"sk-secret-123","temperature":0.7}`)
	if r.status != 201 {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	a := r.body["agent"].(map[string]any)
	id := a["id"].(string)
	if a["enabled"] != true || a["senderId"] != "main" || a["temperature"] != 0.7 || strings.Contains(toJSON(r.body), "sk-secret-123") {
		t.Errorf("agent = %v", a)
	}
	var stored v1alpha1.Agent
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: id}, &stored); err != nil {
		t.Fatal(err)
	}
	var secret corev1.Secret
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: stored.Spec.APIKeyRef.Name}, &secret); err != nil ||
		string(secret.Data[stored.Spec.APIKeyRef.Key]) != "sk-secret-123" || len(secret.OwnerReferences) != 1 {
		t.Fatalf("the key's Secret: %v %v", secret.ObjectMeta, err)
	}
	if r := in.post("/v1/senders/main/agent", key, `{"name":"Again","provider":"zavu","model":"m","systemPrompt":"Hi."}`); r.status != 400 ||
		r.body["details"].(map[string]any)["agentId"] != id {
		t.Errorf("a second agent on the sender = %d %v", r.status, r.body)
	}

	// Reads and a partial update; null clears.
	if r := in.get("/v1/senders/main/agent", key); r.status != 200 || r.body["agent"].(map[string]any)["id"] != id {
		t.Errorf("get by sender = %d %v", r.status, r.body)
	}
	r = in.patch("/v1/agents/"+id, key, `{"temperature":null,"maxTokens":250,"triggerOnChannels":["sms","whatsapp"]}`)
	if a := r.body["agent"].(map[string]any); r.status != 200 || a["temperature"] != nil || a["maxTokens"] != 250.0 || a["name"] != "Support" {
		t.Errorf("patch = %d %v", r.status, r.body)
	}
	if r := in.patch("/v1/agents/"+id, key, `{"triggerOnChannels":["fax"],"name":""}`); r.status != 400 ||
		!strings.Contains(toJSON(r.body), "triggerOnChannels[0]") || !strings.Contains(toJSON(r.body), `"path":"name"`) {
		t.Errorf("bad patch = %d %v", r.status, r.body)
	}

	// A sender-less agent, connected elsewhere; the primary sender stays with its agent.
	r = in.post("/v1/agents", key, `{"name":"Spare","provider":"zavu","model":"m","systemPrompt":"Hi."}`)
	spare := r.body["agent"].(map[string]any)
	if r.status != 201 || spare["enabled"] != false || spare["senderId"] != "" {
		t.Fatalf("spare = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/agents/"+spare["id"].(string)+"/senders", key, `{"senderId":"main"}`); r.status != 400 {
		t.Errorf("connecting a held sender = %d", r.status)
	}
	if r := in.delete("/v1/agents/"+id+"/senders/main", key); r.status != 400 {
		t.Errorf("disconnecting the primary sender = %d", r.status)
	}
	if r := in.get("/v1/agents?limit=1", key); r.status != 200 || len(r.body["items"].([]any)) != 1 ||
		r.body["items"].([]any)[0].(map[string]any)["id"] != spare["id"] || r.body["nextCursor"] == "" {
		t.Errorf("list = %d %v", r.status, r.body)
	}

	// Another project's agents are not found.
	_, other := sendingProject(t, in, nil, apikey.Live)
	if r := in.get("/v1/agents/"+id, other); r.status != 404 {
		t.Errorf("another project reads the agent: %d", r.status)
	}
	if r := in.delete("/v1/agents/"+id, other); r.status != 404 {
		t.Errorf("another project deletes the agent: %d", r.status)
	}

	// Delete: gone, by both names.
	if r := in.delete("/v1/senders/main/agent", key); r.status != 204 {
		t.Fatalf("delete = %d %v", r.status, r.body)
	}
	if r := in.get("/v1/agents/"+id, key); r.status != 404 {
		t.Errorf("after delete = %d", r.status)
	}
}
