package sandbox

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/llm/embedtest"
)

func TestEmbed(t *testing.T) {
	t.Parallel()
	inputs := []string{"refund policy for returns", "how do I return an item for a refund", "the weather in Paris is sunny"}
	got, err := Model{}.Embed(context.Background(), llm.EmbedRequest{Model: "sandbox-embed", Inputs: inputs})
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != "sandbox-embed" || len(got.Vectors) != len(inputs) || got.Usage != (llm.Usage{InputTokens: 4 + 9 + 6}) {
		t.Fatalf("embeddings: model %q, %d vectors, usage %+v", got.Model, len(got.Vectors), got.Usage)
	}
	for i, v := range got.Vectors {
		if len(v) != EmbeddingDimensions || !slices.Equal(v, embedtest.Vector(inputs[i], EmbeddingDimensions)) {
			t.Errorf("vector %d is not the embedtest vector of its input", i)
		}
	}
	dot := func(a, b []float32) (s float32) {
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	if near, far := dot(got.Vectors[0], got.Vectors[1]), dot(got.Vectors[0], got.Vectors[2]); near < far+0.3 {
		t.Errorf("related texts at %.3f, unrelated at %.3f", near, far)
	}

	none, err := Model{}.Embed(context.Background(), llm.EmbedRequest{Model: "m", Inputs: nil})
	if err != nil || len(none.Vectors) != 0 {
		t.Errorf("no inputs: %+v, %v", none, err)
	}
	var e *llm.Error
	if _, err := (Model{}).Embed(context.Background(), llm.EmbedRequest{Model: "m", Inputs: []string{"a", ""}}); !errors.As(err, &e) || e.Kind != llm.KindInvalid {
		t.Errorf("an empty input: %v, want an invalid request", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (Model{}).Embed(ctx, llm.EmbedRequest{Model: "m", Inputs: inputs}); !errors.As(err, &e) || e.Kind != llm.KindUnavailable {
		t.Errorf("a cancelled context: %v, want unavailable", err)
	}
}

// The sandbox answers a question from the knowledge in its system prompt: the sentence that
// shares most words with it.
func TestChatAnswersFromKnowledge(t *testing.T) {
	system := "Be kind.\n\n" + llm.KnowledgeHeading + "\n\n[1] Returns policy\nShipping takes three days. Items may be returned within 30 days for a full refund.\n\n[2] Store hours\nWe open at nine."
	resp, err := Model{}.Chat(context.Background(), llm.Request{Model: "m", System: system,
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "Can I get a refund if I return an item?"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "[m] From Returns policy: Items may be returned within 30 days for a full refund."; resp.Text != want {
		t.Fatalf("answer %q, want %q", resp.Text, want)
	}
	resp, _ = Model{}.Chat(context.Background(), llm.Request{Model: "m", System: system,
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "zzz"}}})
	if resp.Text != "[m] You said: zzz" {
		t.Fatalf("a question the knowledge does not share a word with: %q", resp.Text)
	}
}
