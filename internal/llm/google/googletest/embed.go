package googletest

import (
	"fmt"
	"strings"

	"github.com/switchboard-io/switchboard/internal/llm/embedtest"
)

// Vector is the embedding the server answers for text: embedtest.Vector, in which texts
// that share words are near each other, so that retrieval can be tested end to end.
func Vector(text string, dims int) []float32 { return embedtest.Vector(text, dims) }

func checkEmbed(model, at string, q *EmbedContentRequest) *apiError {
	if q.Content == nil || len(q.Content.Parts) == 0 {
		return invalid(fmt.Sprintf("* %s.content: content is not specified\n", at))
	}
	for j, p := range q.Content.Parts {
		if p.Text == nil && p.InlineData == nil && p.FileData == nil {
			return invalid(fmt.Sprintf("* %s.content.parts[%d].data: required oneof field 'data' must have one initialized field\n", at, j))
		}
	}
	if q.Model != "" && strings.TrimPrefix(q.Model, "models/") != model {
		return invalid(fmt.Sprintf("* %s.model: the model in the request (%s) does not match the model in the URL (models/%s).\n", at, q.Model, model))
	}
	if q.OutputDimensionality != nil && *q.OutputDimensionality <= 0 {
		return invalid(fmt.Sprintf("* %s.output_dimensionality: must be positive.\n", at))
	}
	return nil
}

func checkBatch(model string, b *BatchEmbedContentsRequest) *apiError {
	if len(b.Requests) == 0 {
		return invalid("* BatchEmbedContentsRequest.requests: requests is not specified\n")
	}
	if len(b.Requests) > MaxBatch {
		return invalid(fmt.Sprintf("* BatchEmbedContentsRequest.requests: at most %d requests can be in one batch\n", MaxBatch))
	}
	for i := range b.Requests {
		q := &b.Requests[i]
		at := fmt.Sprintf("BatchEmbedContentsRequest.requests[%d]", i)
		if q.Model == "" {
			return invalid(fmt.Sprintf("* %s.model: model is not specified\n", at))
		}
		if e := checkEmbed(model, at, q); e != nil {
			return e
		}
	}
	return nil
}
