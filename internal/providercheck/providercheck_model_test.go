package providercheck_test

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/controller"
	"github.com/switchboard-io/switchboard/internal/llm/anthropic/anthropictest"
	"github.com/switchboard-io/switchboard/internal/llm/google/googletest"
	"github.com/switchboard-io/switchboard/internal/llm/openai/openaitest"
	"github.com/switchboard-io/switchboard/internal/providercheck"
)

// modelPeer is a loopback peer of a model API: its base URL, the key it takes, a key it
// refuses, the number of models it lists, and how to stop it.
type modelPeer struct {
	url, key, wrongKey string
	models             int
	close              func()
}

func startModelPeer(t *testing.T, typ v1alpha1.ProviderType) modelPeer {
	t.Helper()
	var p modelPeer
	switch typ {
	case v1alpha1.ProviderOpenAI, v1alpha1.ProviderMistral:
		flavor := openaitest.OpenAI
		if typ == v1alpha1.ProviderMistral {
			flavor = openaitest.Mistral
		}
		s := openaitest.New(openaitest.Options{Flavor: flavor})
		p = modelPeer{url: s.URL(), key: s.APIKey(), wrongKey: "sk-wrong-0123456789abcdefghijklmn", models: len(s.Models()), close: s.Close}
	case v1alpha1.ProviderAnthropic:
		s := anthropictest.New(anthropictest.Options{})
		p = modelPeer{url: s.URL(), key: s.APIKey(), wrongKey: "sk-ant-api03-wrong-0123456789abcdef", models: len(s.Models()), close: s.Close}
	case v1alpha1.ProviderGoogle:
		s := googletest.New(googletest.Options{})
		p = modelPeer{url: s.URL(), key: googletest.Key, wrongKey: "AIzaSyWrong-0123456789abcdefghijklmn", models: len(googletest.DefaultModels), close: s.Close}
	default:
		t.Fatalf("no peer for %s", typ)
	}
	t.Cleanup(p.close)
	return p
}

func modelProvider(typ v1alpha1.ProviderType, baseURL string) *v1alpha1.Provider {
	return &v1alpha1.Provider{
		ObjectMeta: metav1.ObjectMeta{Name: string(typ), Namespace: "switchboard-system"},
		Spec: v1alpha1.ProviderSpec{Type: typ, BaseURL: baseURL,
			SecretRef: &v1alpha1.ProviderSecretRef{Name: string(typ) + "-credentials"}},
	}
}

func apiKey(key string) map[string][]byte {
	return map[string][]byte{v1alpha1.ProviderKeyAPIKey: []byte(key)}
}

// Each model type's registered check lists the account's models: a good key gives the account,
// a refused one wraps ErrCredentialsRejected, and a peer that cannot be reached is not a
// rejection. No error carries the key.
func TestModelChecks(t *testing.T) {
	t.Parallel()
	for _, typ := range []v1alpha1.ProviderType{v1alpha1.ProviderOpenAI, v1alpha1.ProviderMistral,
		v1alpha1.ProviderAnthropic, v1alpha1.ProviderGoogle} {
		t.Run(string(typ), func(t *testing.T) {
			t.Parallel()
			check := providercheck.Checks()[typ]
			if check == nil {
				t.Fatalf("no check registered for %s", typ)
			}
			peer := startModelPeer(t, typ)
			p := modelProvider(typ, peer.url)
			ctx := context.Background()

			account, err := check(ctx, p, apiKey(peer.key))
			if err != nil {
				t.Fatalf("good key: %v", err)
			}
			u, _ := url.Parse(peer.url)
			if want := u.Host + ", " + strconv.Itoa(peer.models) + " models"; account != want {
				t.Errorf("account = %q, want %q", account, want)
			}

			_, err = check(ctx, p, apiKey(peer.wrongKey))
			if !errors.Is(err, controller.ErrCredentialsRejected) {
				t.Errorf("wrong key: %v, want it to wrap ErrCredentialsRejected", err)
			} else if strings.Contains(err.Error(), peer.wrongKey) || strings.Contains(err.Error(), peer.key) {
				t.Errorf("wrong key: the key is in %q", err)
			}

			peer.close()
			_, err = check(ctx, p, apiKey(peer.key))
			if err == nil || errors.Is(err, controller.ErrCredentialsRejected) {
				t.Errorf("closed peer: %v, want an error that is not a rejection", err)
			} else if strings.Contains(err.Error(), peer.key) {
				t.Errorf("closed peer: the key is in %q", err)
			}
		})
	}
}

// The provider's answer shows in the error the Ready condition carries.
func TestModelCheckNamesTheAnswer(t *testing.T) {
	t.Parallel()
	peer := startModelPeer(t, v1alpha1.ProviderGoogle)
	_, err := providercheck.Model(context.Background(), modelProvider(v1alpha1.ProviderGoogle, peer.url), apiKey(peer.wrongKey))
	if want := "credentials rejected: HTTP 400: API key not valid. Please pass a valid API key."; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}

	s := openaitest.New(openaitest.Options{})
	t.Cleanup(s.Close)
	s.Fail(503, 1)
	_, err = providercheck.Model(context.Background(), modelProvider(v1alpha1.ProviderOpenAI, s.URL()), apiKey(s.APIKey()))
	if want := "list models: HTTP 503: The server is overloaded or not ready yet."; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

// An openai Provider of a local server may have no key: the check asks without one, and a
// server that wants one refuses it.
func TestModelCheckWithoutKey(t *testing.T) {
	t.Parallel()
	s := openaitest.New(openaitest.Options{})
	t.Cleanup(s.Close)
	p := modelProvider(v1alpha1.ProviderOpenAI, s.URL())
	p.Spec.SecretRef = nil
	_, err := providercheck.Model(context.Background(), p, nil)
	if !errors.Is(err, controller.ErrCredentialsRejected) {
		t.Errorf("error = %v, want a rejection", err)
	}
	if got := s.ListRequests()[0].Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization %q sent without a key", got)
	}
}
