package cluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Send posts body to POST /v1/messages with key and returns the answer's status and the id of
// the message it names: the new one (200), or the original one of an idempotent retry (409
// idempotent_replay, the message in details.message).
func Send(hc *http.Client, url, key, body string) (status int, id string, err error) {
	req, err := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var out struct {
		Message struct{ ID string } `json:"message"`
		Code    string              `json:"code"`
		Details struct {
			Message struct{ ID string } `json:"message"`
		} `json:"details"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return resp.StatusCode, "", fmt.Errorf("send = %d: %w", resp.StatusCode, err)
	}
	switch {
	case resp.StatusCode == http.StatusOK && out.Message.ID != "":
		return resp.StatusCode, out.Message.ID, nil
	case resp.StatusCode == http.StatusConflict && out.Code == "idempotent_replay" && out.Details.Message.ID != "":
		return resp.StatusCode, out.Details.Message.ID, nil
	}
	return resp.StatusCode, "", fmt.Errorf("send = %d %s", resp.StatusCode, out.Code)
}
