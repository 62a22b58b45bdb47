package google

import (
	"context"
	"fmt"

	"google.golang.org/genai"
)

// checkPageSize is how many models Check asks for: the most one page of models.list holds.
const checkPageSize = 1000

// Check lists the account's models (models.list: GET /v1beta/models, one page) to learn
// whether the key is good, and describes the account for a Provider's status: "Gemini API, 50
// models", or the host of another base URL. A refused key is an *llm.Error of kind
// unauthorized (the Gemini API answers a wrong key 400 API_KEY_INVALID); like every error of
// the Client, it never holds the key.
func (c *Client) Check(ctx context.Context) (string, error) {
	ctx, rec := withRecord(ctx)
	page, err := c.models.List(ctx, &genai.ListModelsConfig{PageSize: checkPageSize})
	if err != nil {
		return "", c.classify(ctx, err, rec)
	}
	n := fmt.Sprint(len(page.Items))
	if page.NextPageToken != "" {
		n += "+"
	}
	noun := "models"
	if n == "1" {
		noun = "model"
	}
	return fmt.Sprintf("%s, %s %s", c.account, n, noun), nil
}
