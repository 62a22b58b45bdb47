package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3/option"
)

// Check lists the account's models (GET /models, which OpenAI, Mistral and the compatible
// servers all serve) to learn whether the key is good, and describes the account for a
// Provider's status: "OpenAI, 42 models", or the host of a compatible server. A refused key is
// an *llm.Error of kind unauthorized; like every error of the Client, it never holds the key.
func (c *Client) Check(ctx context.Context) (string, error) {
	var raw *http.Response
	page, err := c.models.List(ctx, option.WithResponseInto(&raw))
	if err != nil {
		return "", c.failure(ctx, raw, err)
	}
	return fmt.Sprintf("%s, %s", c.account, countModels(len(page.Data))), nil
}

// accountName names the account of a client of base URL u: the provider at its public
// address, else the server's host.
func accountName(flavor Flavor, u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	switch {
	case flavor == FlavorOpenAI && host == "api.openai.com":
		return "OpenAI"
	case flavor == FlavorMistral && host == "api.mistral.ai":
		return "Mistral"
	}
	return u.Host
}

func countModels(n int) string {
	if n == 1 {
		return "1 model"
	}
	return fmt.Sprintf("%d models", n)
}
