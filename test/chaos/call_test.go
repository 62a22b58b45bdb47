package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/llm/openai/openaitest"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
	"github.com/switchboard-io/switchboard/test/cluster"
)

// callPrompts is how many questions the caller asks in TestCallSurvivesKill.
const callPrompts = 8

// TestCallSurvivesKill: a live call through the Twilio peer is held by one of two api replicas
// behind a balancer; that replica is killed with SIGKILL in the middle of the call. Twilio's
// relay drops, its <Connect> action reaches the other replica, which hands the call to a new
// relay session; the session picks the transcript up from Postgres and the call goes on to its
// end: every question answered, the call completed, nothing of the transcript lost.
func TestCallSurvivesKill(t *testing.T) {
	peer := twiliotest.NewServer(t)
	model := openaitest.New(openaitest.Options{})
	t.Cleanup(model.Close)
	c := cluster.Start(t, cluster.Options{})
	bal := cluster.NewBalancer(t)
	c.Run("manager")
	apis := []*cluster.Process{c.Run("api", "--public-url", bal.URL), c.Run("api", "--public-url", bal.URL)}
	for _, p := range apis {
		bal.Add(p)
	}
	c.Run("worker")
	ctx := context.Background()
	const ns = "call-chaos"
	limit := int32(1_000_000)
	voice := v1alpha1.AgentVoice{Enabled: true, Greeting: "Acme, hello."}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&v1alpha1.Project{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "project"},
			Spec: v1alpha1.ProjectSpec{DisplayName: ns, RequestRateLimit: &limit, Verification: v1alpha1.VerificationBusinessApproved}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "twilio", Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
			StringData: map[string]string{"accountSid": twiliotest.AccountSID, "authToken": twiliotest.AuthToken}},
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "twilio"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderTwilio, BaseURL: peer.URL, Default: true, SecretRef: &v1alpha1.ProviderSecretRef{Name: "twilio"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.InstallationNamespace, Name: "models",
			Labels: map[string]string{v1alpha1.SecretLabel: "true"}}, StringData: map[string]string{"apiKey": openaitest.DefaultAPIKey}},
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.InstallationNamespace, Name: "models"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderOpenAI, BaseURL: model.URL(), Default: true, SecretRef: &v1alpha1.ProviderSecretRef{Name: "models"}}},
		&v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"}, Spec: v1alpha1.SenderSpec{
			DisplayName: "Main", Default: true, PhoneNumber: "+15005550006", Voice: &v1alpha1.Enablement{Enabled: true}}},
		&v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "voice"}, Spec: v1alpha1.AgentSpec{
			DisplayName: "Voice", Enabled: true, Provider: v1alpha1.ModelZavu, Model: "gpt-4o-mini", SystemPrompt: "Help callers.",
			Senders: []string{"main"}, Voice: &voice}},
	} {
		if err := c.K8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	key, _, err := apikey.NewService(c.Pool).Create(ctx, ns, "chaos", apikey.Live, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The installation's model answers a project whose balance is above zero.
	if _, err := billing.Credit(ctx, c.Pool, billing.Account{Project: ns}, 10_000_000, "chaos", time.Now()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 2*time.Minute, "the agent answers on its sender", func() bool {
		var a v1alpha1.Agent
		var p v1alpha1.Provider
		return c.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "voice"}, &a) == nil && len(a.Status.Senders) == 1 && a.IsReady() &&
			c.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "twilio"}, &p) == nil && p.IsReady()
	})

	prompts := make([]string, callPrompts)
	for i := range prompts {
		prompts[i] = fmt.Sprintf("Question number %d, please.", i+1)
	}
	peer.Script("+14155550123", twiliotest.CallScript{Prompts: prompts, Pause: 400 * time.Millisecond})
	var placed struct {
		Call struct {
			ID string `json:"id"`
		} `json:"call"`
	}
	callAPI(t, bal.URL, key, http.MethodPost, "/v1/calls", `{"to":"+14155550123"}`, &placed)
	id := placed.Call.ID
	if id == "" {
		t.Fatal("no call was placed")
	}
	// Kill the replica holding the relay once a few questions were answered. Which one holds
	// it is the balancer's choice: kill one; if the relay lives on, bring it back and kill the other.
	var sid string
	t.Cleanup(func() {
		if t.Failed() {
			var now map[string]any
			callAPI(t, bal.URL, key, http.MethodGet, "/v1/calls/"+id, "", &now)
			t.Logf("call: %v\nrelays: %+v\napi logs:\n%s\n%s", now, peer.Relays(), apis[0].Tail(30), apis[1].Tail(30))
		}
	})
	waitUntil(t, time.Minute, "three questions answered", func() bool {
		for _, r := range peer.Relays() {
			if r.Sessions > 0 && len(r.Turns) >= 3 {
				sid = r.CallSID
				return true
			}
		}
		return false
	})
	killed := false
	for _, p := range apis {
		p.Kill()
		time.Sleep(time.Second)
		if relayOf(peer, sid).Sessions > 1 || len(relayOf(peer, sid).Actions) > 0 {
			killed = true
			if err := p.Restart(); err != nil {
				t.Fatal(err)
			}
			break
		}
		if err := p.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	if !killed {
		t.Fatal("killing either api replica did not drop the call's relay")
	}
	relay, err := peer.WaitRelay(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if relay.Sessions != 2 || relay.Ended != "caller" {
		t.Errorf("relay: %d sessions, ended %q; actions %+v", relay.Sessions, relay.Ended, relay.Actions)
	}
	var got struct {
		Call struct {
			Status     string `json:"status"`
			EndReason  string `json:"endReason"`
			Transcript []struct {
				Role, Text string
			} `json:"transcript"`
		} `json:"call"`
	}
	waitUntil(t, time.Minute, "the call ends", func() bool {
		callAPI(t, bal.URL, key, http.MethodGet, "/v1/calls/"+id, "", &got)
		return got.Call.Status == "completed"
	})
	if got.Call.EndReason != "hangup" {
		t.Errorf("endReason %q", got.Call.EndReason)
	}
	answered := map[string]bool{}
	for i, turn := range got.Call.Transcript {
		if turn.Role == "assistant" && strings.HasPrefix(turn.Text, "You said: ") {
			answered[strings.TrimPrefix(turn.Text, "You said: ")] = true
		}
		if i == 0 && turn.Text != "Acme, hello." {
			t.Errorf("the transcript opens with %q", turn.Text)
		}
	}
	for _, p := range prompts {
		if !answered[p] {
			t.Errorf("%q has no answer in the transcript", p)
		}
	}
	if t.Failed() {
		b, _ := json.MarshalIndent(got.Call.Transcript, "", "  ")
		t.Logf("transcript: %s", b)
	}
}

func relayOf(peer *twiliotest.Server, sid string) twiliotest.Relay {
	for _, r := range peer.Relays() {
		if r.CallSID == sid {
			return r
		}
	}
	return twiliotest.Relay{}
}

func callAPI(t *testing.T, base, key, method, path, body string, out any) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s = %d", method, path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
