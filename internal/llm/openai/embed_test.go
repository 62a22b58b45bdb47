package openai_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/llm/openai/openaitest"
)

func embedModel(f openaitest.Flavor) string {
	if f == openaitest.Mistral {
		return "mistral-embed"
	}
	return "text-embedding-3-small"
}

func TestEmbed(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv, c := peer(t, f)
			inputs := []string{"alpha", "beta gamma", "delta epsilon zeta"}
			got, err := c.Embed(context.Background(), llm.EmbedRequest{Model: embedModel(f), Inputs: inputs})
			if err != nil {
				t.Fatalf("embed: %v", err)
			}
			if got.Model != embedModel(f) || got.Usage != (llm.Usage{InputTokens: 6}) || len(got.Vectors) != len(inputs) {
				t.Fatalf("embeddings: model %q, usage %+v, %d vectors", got.Model, got.Usage, len(got.Vectors))
			}
			for i, in := range inputs {
				if want := openaitest.Vector(in, srv.EmbeddingDimensions()); !slices.Equal(got.Vectors[i], want) {
					t.Fatalf("vector %d is not %q's", i, in)
				}
			}
			if dims := len(got.Vectors[0]); (f == openaitest.Mistral) != (dims == 1024) {
				t.Fatalf("%d dimensions", dims)
			}
			r := srv.LastRequest()
			if r.Path != "/v1/embeddings" || r.Embeddings.Model != embedModel(f) || !slices.Equal(r.Embeddings.Input, inputs) || r.Embeddings.InputWasString {
				t.Fatalf("request %s %+v", r.Path, r.Embeddings)
			}
			for _, absent := range []string{"encoding_format", "dimensions", "user"} {
				if r.Has(absent) {
					t.Errorf("%s sent", absent)
				}
			}
		})
	}
}

func TestEmbedBatch(t *testing.T) {
	t.Parallel()
	srv := openaitest.New(openaitest.Options{EmbeddingDimensions: 64})
	t.Cleanup(srv.Close)
	c := client(t, openaitest.OpenAI, srv.APIKey(), srv.URL(), nil)
	var inputs []string
	for i := range 300 {
		inputs = append(inputs, fmt.Sprintf("chunk %d of the knowledge base", i))
	}
	got, err := c.Embed(context.Background(), llm.EmbedRequest{Model: "text-embedding-3-large", Inputs: inputs})
	if err != nil {
		t.Fatalf("embed: %v", err)
	}
	if len(got.Vectors) != len(inputs) || got.Usage.InputTokens != 6*300 {
		t.Fatalf("%d vectors, usage %+v", len(got.Vectors), got.Usage)
	}
	for i, in := range inputs {
		if !slices.Equal(got.Vectors[i], openaitest.Vector(in, 64)) {
			t.Fatalf("vector %d is not its input's", i)
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests for one batch", n)
	}
}

// Shorter vectors are asked of OpenAI (dimensions), never of Mistral, whose mistral-embed has
// one length.
func TestEmbedDimensions(t *testing.T) {
	t.Parallel()
	for _, f := range []openaitest.Flavor{openaitest.OpenAI, openaitest.Mistral} {
		srv, c := peer(t, f)
		got, err := c.Embed(context.Background(), llm.EmbedRequest{Model: embedModel(f), Inputs: []string{"refunds"}, Dimensions: 32})
		if err != nil {
			t.Fatalf("%s: embed: %v", f, err)
		}
		sent := srv.Requests()[0].Fields["dimensions"]
		switch {
		case f == openaitest.OpenAI && (string(sent) != "32" || len(got.Vectors[0]) != 32):
			t.Fatalf("openai: dimensions sent %s, vector of %d", sent, len(got.Vectors[0]))
		case f == openaitest.Mistral && sent != nil:
			t.Fatalf("mistral: dimensions %s sent", sent)
		}
	}
}

func TestEmbedNothing(t *testing.T) {
	t.Parallel()
	srv, c := peer(t, openaitest.OpenAI)
	got, err := c.Embed(context.Background(), llm.EmbedRequest{Model: "text-embedding-3-small", Inputs: nil})
	if err != nil || len(got.Vectors) != 0 {
		t.Fatalf("embed: %+v, %v", got, err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests", n)
	}
}

func TestEmbedErrors(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv, c := peer(t, f)
			srv.Fail(429, 1)
			_, err := c.Embed(context.Background(), llm.EmbedRequest{Model: embedModel(f), Inputs: []string{"x"}})
			want := &llm.Error{Kind: llm.KindRateLimited, Status: 429, RetryAfter: openaitest.RateLimitWait}
			e := llmError(t, err)
			if e.Kind != want.Kind || e.Status != want.Status || e.RetryAfter != want.RetryAfter || e.Message == "" {
				t.Fatalf("error %+v", e)
			}
			noKey(t, err, srv.APIKey())
		})
	}
	// The provider refuses an empty input, with its message.
	_, c := peer(t, openaitest.OpenAI)
	_, err := c.Embed(context.Background(), llm.EmbedRequest{Model: "text-embedding-3-small", Inputs: []string{"fine", ""}})
	want := &llm.Error{Kind: llm.KindInvalid, Status: 400, Message: "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."}
	if e := llmError(t, err); !reflect.DeepEqual(e, want) {
		t.Fatalf("error %+v, want %+v", e, want)
	}
}
