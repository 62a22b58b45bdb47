package googletest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The request and answer bodies of the methods the server speaks, as the Gemini API
// reference (ai.google.dev/api) names their fields. The API reads proto JSON, so it takes
// snake_case names as well as camelCase ones: the server does too, and records camelCase.

// GenerateContentRequest is the body of generateContent and streamGenerateContent.
type GenerateContentRequest struct {
	Contents          []Content         `json:"contents"`
	SystemInstruction *Content          `json:"systemInstruction,omitempty"`
	Tools             []Tool            `json:"tools,omitempty"`
	ToolConfig        *ToolConfig       `json:"toolConfig,omitempty"`
	SafetySettings    []json.RawMessage `json:"safetySettings,omitempty"`
	GenerationConfig  *GenerationConfig `json:"generationConfig,omitempty"`
	CachedContent     string            `json:"cachedContent,omitempty"`
	ServiceTier       string            `json:"serviceTier,omitempty"`
	Store             *bool             `json:"store,omitempty"`
	// ContinuationToken resumes an answer that ended with finishReason CONTINUATION.
	ContinuationToken string `json:"continuationToken,omitempty"`
	// The request's model field, which the REST body may repeat.
	Model string `json:"model,omitempty"`
}

// Content is one turn: role "user" or "model".
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Part is one piece of a turn; exactly one of its data fields is set.
type Part struct {
	Text                *string           `json:"text,omitempty"`
	Thought             bool              `json:"thought,omitempty"`
	ThoughtSignature    string            `json:"thoughtSignature,omitempty"`
	FunctionCall        *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse    *FunctionResponse `json:"functionResponse,omitempty"`
	InlineData          json.RawMessage   `json:"inlineData,omitempty"`
	FileData            json.RawMessage   `json:"fileData,omitempty"`
	ExecutableCode      json.RawMessage   `json:"executableCode,omitempty"`
	CodeExecutionResult json.RawMessage   `json:"codeExecutionResult,omitempty"`
	VideoMetadata       json.RawMessage   `json:"videoMetadata,omitempty"`
	MediaResolution     json.RawMessage   `json:"mediaResolution,omitempty"`
	PartMetadata        json.RawMessage   `json:"partMetadata,omitempty"`
}

// TextPart is a part holding text.
func TextPart(s string) Part { return Part{Text: &s} }

// FunctionCall is the model asking for a function to run.
type FunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// FunctionResponse is a function's result sent back to the model.
type FunctionResponse struct {
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name"`
	Response     json.RawMessage `json:"response,omitempty"`
	Parts        json.RawMessage `json:"parts,omitempty"`
	WillContinue *bool           `json:"willContinue,omitempty"`
	Scheduling   string          `json:"scheduling,omitempty"`
}

// Tool is a set of functions (or a built-in tool) the model may use.
type Tool struct {
	FunctionDeclarations  []FunctionDeclaration `json:"functionDeclarations,omitempty"`
	GoogleSearch          json.RawMessage       `json:"googleSearch,omitempty"`
	GoogleSearchRetrieval json.RawMessage       `json:"googleSearchRetrieval,omitempty"`
	CodeExecution         json.RawMessage       `json:"codeExecution,omitempty"`
	URLContext            json.RawMessage       `json:"urlContext,omitempty"`
	FileSearch            json.RawMessage       `json:"fileSearch,omitempty"`
	GoogleMaps            json.RawMessage       `json:"googleMaps,omitempty"`
	ComputerUse           json.RawMessage       `json:"computerUse,omitempty"`
}

// FunctionDeclaration declares one function. Its parameters are either an OpenAPI-subset
// Schema (parameters) or a JSON Schema (parametersJsonSchema), not both.
type FunctionDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
	Response             json.RawMessage `json:"response,omitempty"`
	ResponseJSONSchema   json.RawMessage `json:"responseJsonSchema,omitempty"`
	Behavior             string          `json:"behavior,omitempty"`
}

// ToolConfig constrains function calling.
type ToolConfig struct {
	FunctionCallingConfig *struct {
		Mode                 string   `json:"mode,omitempty"`
		AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
	} `json:"functionCallingConfig,omitempty"`
	RetrievalConfig json.RawMessage `json:"retrievalConfig,omitempty"`
}

// GenerationConfig are the generation parameters.
type GenerationConfig struct {
	Temperature                *float64        `json:"temperature,omitempty"`
	TopP                       *float64        `json:"topP,omitempty"`
	TopK                       *float64        `json:"topK,omitempty"`
	CandidateCount             *int            `json:"candidateCount,omitempty"`
	MaxOutputTokens            *int            `json:"maxOutputTokens,omitempty"`
	StopSequences              []string        `json:"stopSequences,omitempty"`
	PresencePenalty            *float64        `json:"presencePenalty,omitempty"`
	FrequencyPenalty           *float64        `json:"frequencyPenalty,omitempty"`
	Seed                       *int            `json:"seed,omitempty"`
	ResponseMimeType           string          `json:"responseMimeType,omitempty"`
	ResponseSchema             json.RawMessage `json:"responseSchema,omitempty"`
	ResponseJSONSchema         json.RawMessage `json:"responseJsonSchema,omitempty"`
	ResponseModalities         []string        `json:"responseModalities,omitempty"`
	ResponseLogprobs           *bool           `json:"responseLogprobs,omitempty"`
	Logprobs                   *int            `json:"logprobs,omitempty"`
	ThinkingConfig             json.RawMessage `json:"thinkingConfig,omitempty"`
	MediaResolution            string          `json:"mediaResolution,omitempty"`
	SpeechConfig               json.RawMessage `json:"speechConfig,omitempty"`
	ImageConfig                json.RawMessage `json:"imageConfig,omitempty"`
	EnableEnhancedCivicAnswers *bool           `json:"enableEnhancedCivicAnswers,omitempty"`
}

// GenerateContentResponse is an answer, or one event of a streamed answer.
type GenerateContentResponse struct {
	Candidates     []Candidate     `json:"candidates,omitempty"`
	PromptFeedback *PromptFeedback `json:"promptFeedback,omitempty"`
	UsageMetadata  *UsageMetadata  `json:"usageMetadata,omitempty"`
	ModelVersion   string          `json:"modelVersion,omitempty"`
	ResponseID     string          `json:"responseId,omitempty"`
}

// Candidate is one answer of the model.
type Candidate struct {
	Content       *Content `json:"content,omitempty"`
	FinishReason  string   `json:"finishReason,omitempty"`
	FinishMessage string   `json:"finishMessage,omitempty"`
	Index         int      `json:"index"`
	// ContinuationToken (base64) lets a client resume an answer that ended with
	// finishReason CONTINUATION.
	ContinuationToken string `json:"continuationToken,omitempty"`
}

// PromptFeedback says why a prompt was blocked.
type PromptFeedback struct {
	BlockReason string `json:"blockReason,omitempty"`
}

// UsageMetadata counts an answer's tokens.
type UsageMetadata struct {
	PromptTokenCount        int `json:"promptTokenCount,omitempty"`
	CandidatesTokenCount    int `json:"candidatesTokenCount,omitempty"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount,omitempty"`
	ToolUsePromptTokenCount int `json:"toolUsePromptTokenCount,omitempty"`
	CachedContentTokenCount int `json:"cachedContentTokenCount,omitempty"`
	TotalTokenCount         int `json:"totalTokenCount,omitempty"`
}

// EmbedContentRequest is the body of embedContent, and one request of a batch.
type EmbedContentRequest struct {
	Model                string   `json:"model,omitempty"`
	Content              *Content `json:"content"`
	TaskType             string   `json:"taskType,omitempty"`
	Title                string   `json:"title,omitempty"`
	OutputDimensionality *int     `json:"outputDimensionality,omitempty"`
}

// BatchEmbedContentsRequest is the body of batchEmbedContents.
type BatchEmbedContentsRequest struct {
	Requests []EmbedContentRequest `json:"requests"`
}

// ContentEmbedding is one vector.
type ContentEmbedding struct {
	Values []float32 `json:"values"`
}

// text is the text of a content's parts.
func (c *Content) text() string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range c.Parts {
		if p.Text != nil && !p.Thought {
			b.WriteString(*p.Text)
		}
	}
	return b.String()
}

// Text is the text of a content's parts, thoughts left out.
func (c Content) Text() string { return c.text() }

// opaque are fields whose values are the caller's own JSON (arguments, results, schemas):
// their keys are kept as sent.
var opaque = map[string]bool{
	"args": true, "response": true, "parameters": true, "parametersJsonSchema": true,
	"responseJsonSchema": true, "responseSchema": true, "partMetadata": true,
}

// normalize renames snake_case keys to camelCase, as the API's proto JSON parser accepts
// either.
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			k = camel(k)
			if opaque[k] {
				out[k] = x
				continue
			}
			out[k] = normalize(x)
		}
		return out
	case []any:
		for i := range v {
			v[i] = normalize(v[i])
		}
		return v
	default:
		return v
	}
}

func camel(k string) string {
	if !strings.Contains(k, "_") {
		return k
	}
	parts := strings.Split(k, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// decode reads body into v as the API does: malformed JSON and unknown fields are 400s.
func decode(body []byte, v any) *apiError {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	var raw any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return invalid(fmt.Sprintf("Invalid JSON payload received. %s", jsonProblem(err)))
	}
	if _, ok := raw.(map[string]any); !ok {
		return invalid("Invalid JSON payload received. Expected an object.")
	}
	norm, err := json.Marshal(normalize(raw))
	if err != nil {
		return invalid("Invalid JSON payload received.")
	}
	strict := json.NewDecoder(bytes.NewReader(norm))
	strict.DisallowUnknownFields()
	if err := strict.Decode(v); err != nil {
		return invalid(fmt.Sprintf("Invalid JSON payload received. %s", jsonProblem(err)))
	}
	return nil
}

func jsonProblem(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fmt.Sprintf("Unknown name %s: Cannot find field.", name)
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fmt.Sprintf("Invalid value at '%s' (%s).", typeErr.Field, typeErr.Value)
	}
	return "Unexpected token."
}

func decodeGenerate(body []byte) (*GenerateContentRequest, *apiError) {
	var req GenerateContentRequest
	if e := decode(body, &req); e != nil {
		return nil, e
	}
	return &req, nil
}

func decodeEmbed(body []byte) (*EmbedContentRequest, *apiError) {
	var req EmbedContentRequest
	if e := decode(body, &req); e != nil {
		return nil, e
	}
	return &req, nil
}

func decodeBatch(body []byte) (*BatchEmbedContentsRequest, *apiError) {
	var req BatchEmbedContentsRequest
	if e := decode(body, &req); e != nil {
		return nil, e
	}
	return &req, nil
}
