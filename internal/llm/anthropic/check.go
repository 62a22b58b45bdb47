package anthropic

import (
	"context"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

// checkPageSize is how many models Check asks for: the most one page of GET /v1/models holds.
const checkPageSize = 1000

// Check lists the account's models (GET /v1/models, one page) to learn whether the key is
// good, and describes the account for a Provider's status: "Anthropic, 9 models", or the host
// of another base URL. A refused key is an *llm.Error of kind unauthorized; like every error
// of the Client, it never holds the key.
func (c *Client) Check(ctx context.Context) (string, error) {
	page, err := c.sdk.Models.List(ctx, anthropic.ModelListParams{Limit: anthropic.Int(checkPageSize)})
	if err != nil {
		return "", c.classify(err)
	}
	n := fmt.Sprint(len(page.Data))
	if page.HasMore {
		n += "+"
	}
	noun := "models"
	if n == "1" {
		noun = "model"
	}
	return fmt.Sprintf("%s, %s %s", c.account, n, noun), nil
}
