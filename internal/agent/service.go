package agent

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Service is the REST API's agents: it writes Agent resources (as kubectl would, so the API
// server's validation applies to both) and the Secret each keeps its keys in.
type Service struct {
	client client.Client // reads from the informer cache; writes
	live   client.Reader // reads from the API server, for a retried write
	pool   *pgxpool.Pool
	scheme *runtime.Scheme
	// Runtime runs tools for tests and dry runs.
	Runtime *Runtime
	// Knowledge, when set, forgets a deleted agent's knowledge bases at once (else the
	// knowledge sweeper does, within minutes).
	Knowledge Forgetter
}

// Forgetter deletes what an agent knew.
type Forgetter interface {
	Forget(ctx context.Context, project, agent string) error
}

// NewService returns the agents of the REST API.
func NewService(c client.Client, live client.Reader, pool *pgxpool.Pool, rt *Runtime) *Service {
	return &Service{client: c, live: live, pool: pool, scheme: c.Scheme(), Runtime: rt}
}

// Get returns the agent id of project; 404 when there is none.
func (s *Service) Get(ctx context.Context, project, id string) (*v1alpha1.Agent, error) {
	return kubewrite.Read[v1alpha1.Agent](ctx, s.client, project, id, "agent")
}

// OfSender returns the agent answering on the project's sender: 404 when the sender does not
// exist or no agent answers on it.
func (s *Service) OfSender(ctx context.Context, project, sender string) (*v1alpha1.Agent, error) {
	if _, err := kubewrite.Read[v1alpha1.Sender](ctx, s.client, project, sender, "sender"); err != nil {
		return nil, err
	}
	a, err := AnsweringAgent(ctx, s.client, project, sender)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, apperror.NotFoundf("Sender %s has no agent.", sender)
	}
	return a, nil
}

// List returns the project's agents, newest first.
func (s *Service) List(ctx context.Context, project string) ([]v1alpha1.Agent, error) {
	var list v1alpha1.AgentList
	if err := s.client.List(ctx, &list, client.InNamespace(project)); err != nil {
		return nil, fmt.Errorf("list agents of %s: %w", project, err)
	}
	items := kubewrite.Live[v1alpha1.Agent](list.Items)
	sort.SliceStable(items, func(i, j int) bool {
		ti, tj := CreatedAt(&items[i]), CreatedAt(&items[j])
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return items[i].Name > items[j].Name
	})
	return items, nil
}

// Create makes an agent from in: on sender (its primary sender; "" for none). The API key in
// in goes to the agent's own Secret, written before the agent so that it is never without it.
func (s *Service) Create(ctx context.Context, project, sender string, in Input, requireKey bool) (*v1alpha1.Agent, error) {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	for path, v := range map[string]*string{"name": given(in.Name), "provider": given(in.Provider), "model": given(in.Model), "systemPrompt": given(in.SystemPrompt)} {
		if v == nil || strings.TrimSpace(*v) == "" {
			bad(path, "is required")
		}
	}
	if requireKey && in.Provider.Set && in.Provider.Value != string(v1alpha1.ModelZavu) && (!in.APIKey.Set || in.APIKey.Value == "") {
		bad("apiKey", "is required unless provider is zavu")
	}
	if sender != "" {
		if _, err := kubewrite.Read[v1alpha1.Sender](ctx, s.client, project, sender, "sender"); err != nil {
			return nil, err
		}
		if holder, err := AnsweringAgent(ctx, s.client, project, sender); err != nil {
			return nil, err
		} else if holder != nil {
			return nil, senderTaken(sender, holder.Name)
		}
	}
	name, err := randid.Name("agt-", 12)
	if err != nil {
		return nil, err
	}
	a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: name,
		Annotations: map[string]string{CreatedAtAnnotation: time.Now().UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)}}}
	if sender != "" {
		a.Spec.Senders = []string{sender}
		a.Spec.Enabled = true
	}
	errs = append(errs, in.apply(a)...)
	if len(errs) > 0 {
		return nil, apperror.InvalidFields(sortFields(errs)...)
	}
	if err := kubewrite.Write(ctx, s.client, a); err != nil {
		return nil, err
	}
	if in.APIKey.Set && in.APIKey.Value != "" {
		if err := s.SetSecrets(ctx, a, map[string]string{v1alpha1.AgentKeyAPIKey: in.APIKey.Value}); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Update changes the fields in sets; the rest stay.
func (s *Service) Update(ctx context.Context, a *v1alpha1.Agent, in Input) (*v1alpha1.Agent, error) {
	if in.APIKey.Set {
		value := ""
		if !in.APIKey.Null {
			value = in.APIKey.Value
		}
		if err := s.SetSecrets(ctx, a, map[string]string{v1alpha1.AgentKeyAPIKey: value}); err != nil {
			return nil, err
		}
	}
	return s.Change(ctx, a, func(a *v1alpha1.Agent) error {
		if errs := in.apply(a); len(errs) > 0 {
			return apperror.InvalidFields(sortFields(errs)...)
		}
		return nil
	})
}

// Change runs mutate on the agent and writes it, again on a conflict with another writer.
func (s *Service) Change(ctx context.Context, a *v1alpha1.Agent, mutate func(*v1alpha1.Agent) error) (*v1alpha1.Agent, error) {
	a = a.DeepCopy()
	err := kubewrite.Retry(ctx, s.live, a, func(a *v1alpha1.Agent) error {
		if err := mutate(a); err != nil {
			return err
		}
		return kubewrite.Write(ctx, s.client, a)
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Delete deletes the agent and its own Secret (at once, rather than whenever garbage
// collection gets to it), and returns once this process no longer reads the agent.
func (s *Service) Delete(ctx context.Context, a *v1alpha1.Agent) error {
	if err := s.client.Delete(ctx, a); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete agent %s: %w", a.Name, err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.OwnSecretName()}}
	if err := s.client.Delete(ctx, secret); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the secret of agent %s: %w", a.Name, err)
	}
	kubewrite.WaitGone(ctx, s.client, a)
	if s.Knowledge != nil {
		if err := s.Knowledge.Forget(ctx, a.Namespace, a.Name); err != nil {
			return fmt.Errorf("delete the knowledge bases of agent %s: %w", a.Name, err)
		}
	}
	return nil
}

// Connect makes the agent answer on sender too: 400 naming the agent that holds it already.
func (s *Service) Connect(ctx context.Context, a *v1alpha1.Agent, sender string) (*v1alpha1.Agent, error) {
	if _, err := kubewrite.Read[v1alpha1.Sender](ctx, s.client, a.Namespace, sender, "sender"); err != nil {
		return nil, err
	}
	holder, err := AnsweringAgent(ctx, s.client, a.Namespace, sender)
	if err != nil {
		return nil, err
	}
	if holder != nil && holder.Name != a.Name {
		return nil, senderTaken(sender, holder.Name)
	}
	return s.Change(ctx, a, func(a *v1alpha1.Agent) error {
		for _, x := range a.Spec.Senders {
			if x == sender {
				return nil
			}
		}
		a.Spec.Senders = append(a.Spec.Senders, sender)
		return nil
	})
}

// Disconnect stops the agent answering on sender; its primary sender cannot be disconnected.
func (s *Service) Disconnect(ctx context.Context, a *v1alpha1.Agent, sender string) (*v1alpha1.Agent, error) {
	if len(a.Spec.Senders) > 0 && a.Spec.Senders[0] == sender {
		return nil, apperror.New(apperror.Invalid, "invalid_request",
			fmt.Sprintf("Sender %s is the agent's primary sender, which is part of the agent: delete the agent instead.", sender))
	}
	found := false
	for _, x := range a.Spec.Senders {
		found = found || x == sender
	}
	if !found {
		return nil, apperror.NotFoundf("Agent %s does not answer on sender %s.", a.Name, sender)
	}
	return s.Change(ctx, a, func(a *v1alpha1.Agent) error {
		out := a.Spec.Senders[:0]
		for _, x := range a.Spec.Senders {
			if x != sender {
				out = append(out, x)
			}
		}
		a.Spec.Senders = out
		return nil
	})
}

// AnswersOn tells whether agent a answers channel typ of its senders: one-way SMS never
// receives; otherwise every channel, or those of triggerOnChannels.
func AnswersOn(a *v1alpha1.Agent, typ v1alpha1.Channel) bool {
	return typ != v1alpha1.ChannelSMSOneway &&
		(len(a.Spec.TriggerOnChannels) == 0 || slices.Contains(a.Spec.TriggerOnChannels, typ))
}

// ConnectChannel makes the agent answer channel typ of sender (v2's channel links: the
// resource keeps sender links, so the agent answers that sender's other channels too, as its
// triggerOnChannels admit). An agent whose triggerOnChannels lack typ gets it added, so the
// channel asked for is answered. One-way SMS cannot receive: 409.
func (s *Service) ConnectChannel(ctx context.Context, a *v1alpha1.Agent, sender, address string, typ v1alpha1.Channel) (*v1alpha1.Agent, error) {
	if typ == v1alpha1.ChannelSMSOneway {
		e := apperror.New(apperror.Conflict, "channel_cannot_receive",
			"One-way SMS cannot receive messages, so no agent can answer on it: connect the address's sms channel instead.")
		e.Details = map[string]any{"address": address, "type": string(v1alpha1.ChannelSMSOneway)}
		return nil, e
	}
	a, err := s.Connect(ctx, a, sender)
	if err != nil || AnswersOn(a, typ) {
		return a, err
	}
	return s.Change(ctx, a, func(a *v1alpha1.Agent) error {
		if !AnswersOn(a, typ) {
			a.Spec.TriggerOnChannels = append(a.Spec.TriggerOnChannels, typ)
		}
		return nil
	})
}

// DisconnectChannel stops the agent answering on sender, which holds channel typ at address,
// and so on that sender's other channels. v2 has no primary sender: any of them can be
// disconnected.
func (s *Service) DisconnectChannel(ctx context.Context, a *v1alpha1.Agent, sender, address string, typ v1alpha1.Channel) error {
	if !slices.Contains(a.Spec.Senders, sender) || !AnswersOn(a, typ) {
		return apperror.NotFoundf("Agent %s does not answer on %s at %s.", a.Name, typ, address)
	}
	_, err := s.Change(ctx, a, func(a *v1alpha1.Agent) error {
		a.Spec.Senders = slices.DeleteFunc(a.Spec.Senders, func(x string) bool { return x == sender })
		return nil
	})
	return err
}

// SetSecrets writes keys of the agent's own Secret (created, owned by the agent, labelled for
// Switchboard's cache); an empty value removes its key.
func (s *Service) SetSecrets(ctx context.Context, a *v1alpha1.Agent, data map[string]string) error {
	key := client.ObjectKey{Namespace: a.Namespace, Name: a.OwnSecretName()}
	var secret corev1.Secret
	err := s.live.Get(ctx, key, &secret)
	if apierrors.IsNotFound(err) {
		secret = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{v1alpha1.SecretLabel: "true"}}, Type: corev1.SecretTypeOpaque}
		if err := controllerutil.SetControllerReference(a, &secret, s.scheme); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("read the secret of agent %s: %w", a.Name, err)
	}
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	for k, v := range data {
		if v == "" {
			delete(secret.Data, k)
		} else {
			secret.Data[k] = []byte(v)
		}
	}
	if secret.ResourceVersion == "" {
		err = s.client.Create(ctx, &secret, client.FieldOwner(kubewrite.FieldManager))
	} else {
		err = s.client.Update(ctx, &secret, client.FieldOwner(kubewrite.FieldManager))
	}
	if err != nil {
		return fmt.Errorf("write the secret of agent %s: %w", a.Name, err)
	}
	return nil
}

// HasOwnAPIKey says whether the agent reads its key from its own Secret (the API's).
func HasOwnAPIKey(a *v1alpha1.Agent) bool {
	return a.Spec.APIKeyRef != nil && a.Spec.APIKeyRef.Name == a.OwnSecretName()
}

// senderTaken is the 400 for a sender another agent answers on: a sender has one agent, and
// details.agentId names it.
func senderTaken(sender, holder string) error {
	e := apperror.New(apperror.Invalid, "invalid_request", fmt.Sprintf("Sender %s already has an agent (%s); a sender has at most one.", sender, holder))
	e.Details = map[string]any{"agentId": holder}
	return e
}

func sortFields(errs []apperror.FieldError) []apperror.FieldError {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Path < errs[j].Path })
	return errs
}
