package openaitest

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"slices"

	"github.com/switchboard-io/switchboard/internal/llm/embedtest"
)

// EmbeddingsRequest is the body of an embeddings request.
type EmbeddingsRequest struct {
	Model string
	// Input are the texts to embed (a single string is one; token arrays are kept as their
	// JSON text).
	Input []string
	// InputWasString says input was a single string rather than an array.
	InputWasString bool
	// Dimensions is OpenAI's dimensions, OutputDimension Mistral's output_dimension.
	Dimensions      *int
	OutputDimension *int
	EncodingFormat  string
}

var mistralEmbeddingFields = map[string]bool{
	"model": true, "input": true, "metadata": true, "output_dimension": true, "output_dtype": true, "encoding_format": true,
}

// Vector is the embedding the server answers for text: embedtest.Vector, in which texts
// that share words are near each other, so that retrieval can be tested end to end.
func Vector(text string, dims int) []float32 { return embedtest.Vector(text, dims) }

func (s *Server) embeddings(w http.ResponseWriter, idx int, body []byte) {
	req, e := s.decodeEmbeddings(body)
	if req != nil {
		s.update(idx, func(rec *Request) { rec.Embeddings = req })
	}
	if e != nil {
		s.invalid(w, e)
		return
	}
	dims := s.dims
	if req.Dimensions != nil {
		dims = *req.Dimensions
	}
	if req.OutputDimension != nil {
		dims = *req.OutputDimension
	}
	data := make([]any, len(req.Input))
	tokens := 0
	for i, in := range req.Input {
		v := Vector(in, dims)
		var emb any
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			emb = base64.StdEncoding.EncodeToString(b)
		} else {
			f := make([]float64, len(v))
			for j, x := range v {
				f[j] = float64(x)
			}
			emb = f
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": emb}
		tokens += max(1, countWords(in))
	}
	res := map[string]any{"object": "list", "data": data, "model": req.Model}
	if s.flavor == Mistral {
		res["id"] = s.hexID(32)
		res["usage"] = map[string]any{"prompt_tokens": tokens, "total_tokens": tokens, "completion_tokens": 0}
	} else {
		res["usage"] = map[string]any{"prompt_tokens": tokens, "total_tokens": tokens}
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) decodeEmbeddings(body []byte) (*EmbeddingsRequest, *apiError) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		if s.flavor == Mistral {
			return nil, schemaError(detail{Type: "json_invalid", Loc: []any{"body", 0}, Msg: "JSON decode error", Input: map[string]any{}})
		}
		return nil, badParam("", "", "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)")
	}
	if s.flavor == Mistral {
		var ds []detail
		for _, k := range []string{"model", "input"} {
			if _, ok := fields[k]; !ok {
				ds = append(ds, missing(k))
			}
		}
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !mistralEmbeddingFields[k] {
				var v any
				_ = json.Unmarshal(fields[k], &v)
				ds = append(ds, extraForbidden(v, k))
			}
		}
		if len(ds) > 0 {
			return nil, schemaError(ds...)
		}
	}
	req := &EmbeddingsRequest{}
	var w struct {
		Model           string `json:"model"`
		Dimensions      *int   `json:"dimensions"`
		OutputDimension *int   `json:"output_dimension"`
		EncodingFormat  string `json:"encoding_format"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, badParam("", "invalid_type", "Invalid type in the request body.")
	}
	req.Model, req.Dimensions, req.OutputDimension, req.EncodingFormat = w.Model, w.Dimensions, w.OutputDimension, w.EncodingFormat
	if req.Model == "" {
		return req, badParam("", "", "you must provide a model parameter")
	}
	in, ok := fields["input"]
	if !ok {
		return req, badParam("input", "missing_required_parameter", "Missing required parameter: 'input'.")
	}
	invalidInput := badParam("input", "", "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.")
	in = bytes.TrimSpace(in)
	switch {
	case len(in) > 0 && in[0] == '"':
		var one string
		_ = json.Unmarshal(in, &one)
		req.Input, req.InputWasString = []string{one}, true
	case len(in) > 0 && in[0] == '[':
		var items []json.RawMessage
		if json.Unmarshal(in, &items) != nil {
			return req, invalidInput
		}
		for _, it := range items {
			var str string
			if json.Unmarshal(it, &str) == nil {
				req.Input = append(req.Input, str)
			} else {
				req.Input = append(req.Input, string(it)) // tokens
			}
		}
	default:
		return req, invalidInput
	}
	if len(req.Input) == 0 || len(req.Input) > 2048 || slices.Contains(req.Input, "") {
		return req, invalidInput
	}
	if f := req.EncodingFormat; f != "" && f != "float" && f != "base64" {
		return req, badParam("encoding_format", "invalid_value", "Invalid value: '%s'. Supported values are: 'float' and 'base64'.", f)
	}
	for name, v := range map[string]*int{"dimensions": req.Dimensions, "output_dimension": req.OutputDimension} {
		if v != nil && *v < 1 {
			return req, badParam(name, "integer_below_min_value", "Invalid '%s': integer below minimum value. Expected a value >= 1, but got %d instead.", name, *v)
		}
	}
	return req, nil
}
