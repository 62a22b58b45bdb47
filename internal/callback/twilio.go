package callback

import (
	"context"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/phonenumber"
	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
)

// twilioVerified reads a Twilio request's form once its X-Twilio-Signature, made with the
// Provider's auth token over the URL Twilio called, is right. It answers the refusal itself
// and returns ok false: 404 for an unknown Provider, 401 unsigned, 403 wrongly signed.
func (h *Handler) twilioVerified(w http.ResponseWriter, r *http.Request) (*v1alpha1.Provider, bool) {
	ns, name := r.PathValue("namespace"), r.PathValue("provider")
	p, creds, err := h.provider(r.Context(), ns, name, v1alpha1.ProviderTwilio)
	if apierrors.IsNotFound(err) {
		refuse(w, http.StatusNotFound, "no such provider")
		return nil, false
	}
	if err != nil {
		h.internalError(w, err, "twilio")
		return nil, false
	}
	signature := r.Header.Get(twilio.SignatureHeader)
	if signature == "" {
		refuse(w, http.StatusUnauthorized, "missing "+twilio.SignatureHeader)
		return nil, false
	}
	if err := r.ParseForm(); err != nil {
		h.internalError(w, err, "twilio")
		return nil, false
	}
	if len(creds["authToken"]) == 0 || !twilio.VerifySignature(string(creds["authToken"]), h.publicURL(r), r.PostForm, signature) {
		refuse(w, http.StatusForbidden, "bad "+twilio.SignatureHeader)
		return nil, false
	}
	return p, true
}

// twilioStatus takes a message's or a call's status callback.
func (h *Handler) twilioStatus(call bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok := h.twilioVerified(w, r)
		if !ok {
			return
		}
		u := twilio.ParseMessageStatus(r.PostForm)
		if call {
			u = twilio.ParseCallStatus(r.PostForm)
		}
		if err := h.applyStatus(r.Context(), p, u, r.URL.Query().Get(transport.CallbackMessageParam)); err != nil {
			h.internalError(w, err, "twilio status")
			return
		}
		w.WriteHeader(http.StatusOK)
	}
}

// twilioInbound takes an SMS or MMS sent to one of the Provider's numbers: it reaches the
// sender with that number, and "STOP" or "START" also changes what the number may send them.
func (h *Handler) twilioInbound(w http.ResponseWriter, r *http.Request) {
	p, ok := h.twilioVerified(w, r)
	if !ok {
		return
	}
	in, err := twilio.ParseInbound(r.PostForm)
	if err != nil {
		http.Error(w, "not an inbound message", http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	snd, err := h.senderAt(r, p, in.To)
	if err != nil {
		h.internalError(w, err, "twilio inbound")
		return
	}
	if snd == nil {
		h.Log.Info("inbound message for a number no sender receives on", "provider", p.Namespace+"/"+p.Name, "to", in.To)
	} else {
		if out, back := twilio.OptOut(r.PostForm); out || back {
			if err := h.Messages.SetOptOut(ctx, snd.Namespace, false, in.To, in.From, out); err != nil {
				h.internalError(w, err, "twilio inbound")
				return
			}
		}
		if _, err := h.Messages.Receive(ctx, message.Inbound{Project: snd.Namespace, Sender: snd.Name, Inbound: in}); err != nil {
			h.internalError(w, err, "twilio inbound")
			return
		}
	}
	w.Header().Set("Content-Type", "text/xml")
	_, _ = w.Write([]byte(twilio.EmptyTwiML))
}

// senderAt finds the sender that receives SMS at number through p (senderWhere), in the project
// that owns the number only (numberOwner): another project's sender with the number on gets
// nothing of it, its STOP replies included.
func (h *Handler) senderAt(r *http.Request, p *v1alpha1.Provider, number string) (*v1alpha1.Sender, error) {
	project, err := h.numberOwner(r.Context(), p, number)
	if err != nil || project == "" {
		return nil, err
	}
	return h.senderWhere(r.Context(), p, v1alpha1.ChannelSMS, func(s *v1alpha1.Sender) bool {
		return s.Namespace == project && s.Address(v1alpha1.ChannelSMS) == number && containsChannel(s.SendableChannels(), v1alpha1.ChannelSMS)
	})
}

// numberOwner is the project that receives at number through p (docs/senders.md#phone-numbers):
// the one a Ready PhoneNumber holds it for, when p serves that project; "" for none. The
// sandbox's test numbers, which nobody owns, are received in p's own namespace only.
func (h *Handler) numberOwner(ctx context.Context, p *v1alpha1.Provider, number string) (string, error) {
	if v1alpha1.IsSandboxNumber(number) {
		return p.Namespace, nil
	}
	owner, err := phonenumber.Owner(ctx, h.Reader, number)
	if err != nil || owner == nil {
		return "", err
	}
	if p.Namespace != h.InstallationNamespace && p.Namespace != owner.Status.Project {
		return "", nil // a project's own account serves that project alone
	}
	return owner.Status.Project, nil
}

func containsChannel(list []v1alpha1.Channel, c v1alpha1.Channel) bool {
	for _, x := range list {
		if x == c {
			return true
		}
	}
	return false
}
