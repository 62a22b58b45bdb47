// Package models makes the client of each model API an agent can call: the adapters of
// internal/llm by Provider type.
package models

import (
	"fmt"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/llm/anthropic"
	"github.com/switchboard-io/switchboard/internal/llm/google"
	"github.com/switchboard-io/switchboard/internal/llm/openai"
)

// New returns the client of a model API account (agent.Factory): kind is the Provider type,
// apiKey its key (empty for a local OpenAI-compatible server), baseURL empty for the public one.
func New(kind v1alpha1.ProviderType, apiKey, baseURL string) (llm.Model, error) {
	switch kind {
	case v1alpha1.ProviderOpenAI:
		return openai.New(openai.Config{Flavor: openai.FlavorOpenAI, APIKey: apiKey, BaseURL: baseURL})
	case v1alpha1.ProviderMistral:
		return openai.New(openai.Config{Flavor: openai.FlavorMistral, APIKey: apiKey, BaseURL: baseURL})
	case v1alpha1.ProviderAnthropic:
		return anthropic.New(anthropic.Config{APIKey: apiKey, BaseURL: baseURL})
	case v1alpha1.ProviderGoogle:
		return google.New(google.Config{APIKey: apiKey, BaseURL: baseURL})
	}
	return nil, fmt.Errorf("%q is not a model API", kind)
}
