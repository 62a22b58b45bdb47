package callback

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/coder/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/call"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
)

// Calls (docs/calls.md) through Twilio: the call's status callbacks and answering machine
// detection, the ConversationRelay WebSocket and its session's end (the <Connect> action), and
// the calls to the Provider's numbers. Each names its call in the signed URL's query, and
// moves only a call that went through the Provider that signed it.

// relayMaxMessage bounds one relay message from Twilio (a prompt is a sentence or two).
const relayMaxMessage = 64 << 10

// callOf is the call a verified request through p names (?call=), when it went through p.
func (h *Handler) callOf(w http.ResponseWriter, r *http.Request, p *v1alpha1.Provider) (string, bool) {
	id := r.URL.Query().Get("call")
	c, err := h.Calls.Through(r.Context(), id, p.Namespace+"/"+p.Name)
	if err != nil {
		h.internalError(w, err, "twilio call")
		return "", false
	}
	if c == "" {
		// Not a call of this Provider's: acknowledged, so Twilio does not retry; nothing moves.
		h.Log.Info("call callback for a call Switchboard did not place through this provider", "provider", p.Namespace+"/"+p.Name)
		w.WriteHeader(http.StatusOK)
		return "", false
	}
	return c, true
}

// verifiedCall is the call a signed request through its Provider names; ok is false when it
// answered the request itself.
func (h *Handler) verifiedCall(w http.ResponseWriter, r *http.Request) (*v1alpha1.Provider, string, bool) {
	p, ok := h.twilioVerified(w, r)
	if !ok {
		return nil, "", false
	}
	id, ok := h.callOf(w, r, p)
	return p, id, ok
}

// twilioCallStatus takes a call's status callback.
func (h *Handler) twilioCallStatus(w http.ResponseWriter, r *http.Request) {
	_, id, ok := h.verifiedCall(w, r)
	if !ok {
		return
	}
	u := twilio.ParseCallProgress(r.PostForm)
	progress := call.Progress{Status: call.Normalize(u.Status), AnsweredBy: u.AnsweredBy}
	if progress.Status != call.StatusInProgress && !call.Active(progress.Status) {
		d := int32(u.Duration)
		progress.Duration = &d
	}
	if err := h.Calls.Advance(r.Context(), id, progress); err != nil {
		h.internalError(w, err, "twilio call status")
		return
	}
	w.WriteHeader(http.StatusOK)
}

// twilioCallAMD takes the answering machine detection of a call.
func (h *Handler) twilioCallAMD(w http.ResponseWriter, r *http.Request) {
	_, id, ok := h.verifiedCall(w, r)
	if !ok {
		return
	}
	if amd := twilio.ParseAMD(r.PostForm); twilio.IsMachine(amd.AnsweredBy) {
		if err := h.Calls.Machine(r.Context(), id, amd.AnsweredBy); err != nil {
			h.internalError(w, err, "twilio amd")
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

// twilioRelayEnded answers the <Connect> action: the transfer, a new session for a relay that
// dropped while the call is up (a takeover), else hang up.
func (h *Handler) twilioRelayEnded(w http.ResponseWriter, r *http.Request) {
	p, id, ok := h.verifiedCall(w, r)
	if !ok {
		return
	}
	ended := twilio.ParseRelayEnded(r.PostForm)
	next, err := h.Calls.AfterRelay(r.Context(), id, ended.SessionStatus == "failed")
	if err != nil {
		h.internalError(w, err, "twilio relay ended")
		return
	}
	twiml := twilio.HangupTwiML("", "")
	switch {
	case next.TransferTo != "":
		twiml = twilio.DialTwiML(next.TransferTo, next.CallerID)
	case next.Resume:
		e := call.EndpointsOf(h.PublicURL, "twilio", p.Namespace, p.Name, id)
		twiml = twilio.ConversationRelayTwiML(call.RelayOptions(e, next.Speech, false))
	}
	writeTwiML(w, twiml)
}

// twilioVoice answers a call to one of the Provider's numbers: the voice agent of the sender
// with that number, in the project that owns it, holds it; nobody else's. A call nobody takes
// is rejected (Twilio charges nothing for a rejected call).
func (h *Handler) twilioVoice(w http.ResponseWriter, r *http.Request) {
	p, ok := h.twilioVerified(w, r)
	if !ok {
		return
	}
	in, err := twilio.ParseIncomingCall(r.PostForm)
	if err != nil {
		http.Error(w, "not an incoming call", http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	snd, err := h.voiceSenderAt(ctx, p, in.To)
	if err != nil {
		h.internalError(w, err, "twilio voice")
		return
	}
	if snd == nil {
		h.Log.Info("incoming call to a number no sender takes calls on", "provider", p.Namespace+"/"+p.Name)
		writeTwiML(w, twilio.RejectTwiML("rejected"))
		return
	}
	c, speech, refused, err := h.Calls.Receive(ctx, call.Incoming{Sender: snd, Provider: p.Namespace + "/" + p.Name,
		ProviderCallID: in.CallSID, From: in.From, To: in.To})
	if err != nil {
		h.internalError(w, err, "twilio voice")
		return
	}
	if refused != "" {
		h.Log.Info("incoming call rejected", "sender", snd.Namespace+"/"+snd.Name, "why", refused)
		writeTwiML(w, twilio.RejectTwiML("rejected"))
		return
	}
	e := call.EndpointsOf(h.PublicURL, "twilio", p.Namespace, p.Name, c.ID)
	writeTwiML(w, twilio.ConversationRelayTwiML(call.RelayOptions(e, speech, true)))
}

// voiceSenderAt is the sender that takes calls at number through p, in the project that owns
// the number (numberOwner).
func (h *Handler) voiceSenderAt(ctx context.Context, p *v1alpha1.Provider, number string) (*v1alpha1.Sender, error) {
	project, err := h.numberOwner(ctx, p, number)
	if err != nil || project == "" {
		return nil, err
	}
	return h.senderWhere(ctx, p, v1alpha1.ChannelVoice, func(s *v1alpha1.Sender) bool {
		return s.Namespace == project && s.Spec.PhoneNumber == number && s.Spec.Voice != nil && s.Spec.Voice.Enabled
	})
}

// twilioRelay holds a call's ConversationRelay WebSocket. The handshake is signed over the
// WebSocket's URL (wss://, as the TwiML named it) with no parameters; an unsigned or forged
// one is refused before the upgrade.
func (h *Handler) twilioRelay(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("provider")
	p, creds, err := h.provider(r.Context(), ns, name, v1alpha1.ProviderTwilio)
	if apierrors.IsNotFound(err) {
		refuse(w, http.StatusNotFound, "no such provider")
		return
	}
	if err != nil {
		h.internalError(w, err, "twilio relay")
		return
	}
	signature := r.Header.Get(twilio.SignatureHeader)
	if signature == "" {
		refuse(w, http.StatusUnauthorized, "missing "+twilio.SignatureHeader)
		return
	}
	if len(creds["authToken"]) == 0 || !twilio.VerifySignature(string(creds["authToken"]), wsURL(h.publicURL(r)), nil, signature) {
		refuse(w, http.StatusForbidden, "bad "+twilio.SignatureHeader)
		return
	}
	id, ok := h.callOf(w, r, p)
	if !ok {
		return
	}
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept answered the failed handshake
	}
	ws.SetReadLimit(relayMaxMessage)
	// The call outlives the request's context only as long as the connection does.
	if err := h.Calls.ServeRelay(context.WithoutCancel(r.Context()), &wsConn{ws: ws}, id); err != nil {
		h.Log.Info("relay ended with an error", "call", id, "error", err.Error())
	}
}

// wsURL is an http(s) URL as the WebSocket URL of the same place.
func wsURL(u string) string {
	switch {
	case strings.HasPrefix(u, "https://"):
		return "wss://" + strings.TrimPrefix(u, "https://")
	case strings.HasPrefix(u, "http://"):
		return "ws://" + strings.TrimPrefix(u, "http://")
	}
	return u
}

// wsConn is a relay's WebSocket as a call.Conn.
type wsConn struct {
	ws *websocket.Conn
}

func (c *wsConn) Read(ctx context.Context) (twilio.RelayMessage, error) {
	var m twilio.RelayMessage
	typ, b, err := c.ws.Read(ctx)
	if err != nil {
		return m, err
	}
	if typ != websocket.MessageText {
		return m, errors.New("relay: a binary message")
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, errors.New("relay: a message that is not JSON")
	}
	return m, nil
}

func (c *wsConn) Write(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.ws.Write(ctx, websocket.MessageText, b)
}

func (c *wsConn) Close() error {
	return c.ws.Close(websocket.StatusNormalClosure, "")
}

func writeTwiML(w http.ResponseWriter, twiml string) {
	w.Header().Set("Content-Type", "text/xml")
	_, _ = w.Write([]byte(twiml))
}
