package httpapi

import (
	"net/http"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/projectwebhook"
)

type webhookV2JSON struct {
	URL              string    `json:"url"`
	Events           []string  `json:"events"`
	SignatureVersion string    `json:"signatureVersion"`
	Secret           string    `json:"secret,omitempty"`
	CreatedAt        time.Time `json:"createdAt"`
}

type senderWebhookJSON struct {
	SenderID         string   `json:"senderId"`
	URL              string   `json:"url"`
	Events           []string `json:"events"`
	SignatureVersion string   `json:"signatureVersion"`
}

func webhookV2View(wh *v1alpha1.Webhook, secret string) *webhookV2JSON {
	if wh == nil {
		return nil
	}
	out := &webhookV2JSON{URL: wh.Spec.URL, Events: []string{}, SignatureVersion: string(wh.Spec.SignatureVersion),
		Secret: secret, CreatedAt: wh.CreationTimestamp.UTC()}
	for _, e := range wh.Spec.Events {
		out.Events = append(out.Events, string(e))
	}
	return out
}

func (s *Server) getWebhookV2(w http.ResponseWriter, r *http.Request) {
	st, err := s.projectHooks.Get(r.Context(), keyFrom(r.Context()).Project)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	senders := []senderWebhookJSON{}
	for _, snd := range st.SenderWebhooks {
		sw := senderWebhookJSON{SenderID: snd.Name, URL: snd.Spec.Webhook.URL, Events: []string{}, SignatureVersion: string(snd.Spec.Webhook.SignatureVersion)}
		for _, e := range snd.Spec.Webhook.Events {
			sw.Events = append(sw.Events, string(e))
		}
		senders = append(senders, sw)
	}
	writeJSON(w, http.StatusOK, map[string]any{"webhook": webhookV2View(st.Webhook, ""), "senderWebhooks": senders})
}

// putProjectWebhook creates (201, its secret shown once) or replaces (200, the secret kept) the
// project webhook of kind: PUT /v2/webhook and POST /v1/invitations/webhook.
func (s *Server) putProjectWebhook(kind v1alpha1.WebhookKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in projectwebhook.PutInput
		if err := decodeJSON(r, &in, false); err != nil {
			s.writeError(w, r, err)
			return
		}
		wh, created, secret, err := s.projectHooks.Put(r.Context(), keyFrom(r.Context()).Project, kind, in)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		status := http.StatusOK
		if created {
			status = http.StatusCreated
		}
		writeJSON(w, status, map[string]any{"webhook": webhookV2View(wh, secret)})
	}
}

func (s *Server) rotateWebhookV2Secret(w http.ResponseWriter, r *http.Request) {
	secret, err := s.projectHooks.RotateSecret(r.Context(), keyFrom(r.Context()).Project)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"secret": secret})
}

func (s *Server) deleteWebhookV2(w http.ResponseWriter, r *http.Request) {
	if err := s.projectHooks.Delete(r.Context(), keyFrom(r.Context()).Project); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
