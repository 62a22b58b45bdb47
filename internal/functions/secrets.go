package functions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
)

// Limits of a function's secrets.
const (
	MaxSecrets     = 100
	MaxSecretValue = 32 << 10
)

// secretTimesAnnotation keeps, on the function's Secret, when each key was set (epoch ms).
const secretTimesAnnotation = "messaging.switchboard.io/secret-times"

var secretKeyPattern = regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,127}$`)

// reservedPrefixes are the variables the runtimes own: the hosted service's (AWS, LAMBDA) as
// clients expect them refused, Node's and the platform's.
var reservedPrefixes = []string{"AWS", "LAMBDA", "NODE_", "SWITCHBOARD_", "ZAVUDEV_"}

// Secret is one of a function's secrets as the API lists it: never its value.
type Secret struct {
	ID         string
	Key        string
	ValueLast4 string
	CreatedAt  int64
	UpdatedAt  int64
}

type secretTimes struct {
	Created int64 `json:"c"`
	Updated int64 `json:"u"`
}

// SecretName is the Secret holding a function's secrets and its key.
func SecretName(f *v1alpha1.Function) string { return f.Name + secretNameSuffix }

// Secrets lists the function's secrets by key.
func (s *Service) Secrets(ctx context.Context, f *v1alpha1.Function) ([]Secret, error) {
	var secret corev1.Secret
	err := s.live.Get(ctx, client.ObjectKey{Namespace: f.Namespace, Name: SecretName(f)}, &secret)
	if apierrors.IsNotFound(err) {
		return []Secret{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the secrets of function %s: %w", f.Name, err)
	}
	times := timesOf(&secret)
	out := make([]Secret, 0, len(secret.Data))
	for _, k := range slices.Sorted(maps.Keys(secret.Data)) {
		out = append(out, secretEntry(f, k, string(secret.Data[k]), times[k]))
	}
	return out, nil
}

func secretEntry(f *v1alpha1.Function, key, value string, t secretTimes) Secret {
	sum := sha256.Sum256([]byte(string(f.UID) + "/" + key))
	last4 := "****"
	// A short value shown by its last four characters would be mostly shown.
	if len(value) > 8 {
		last4 = value[len(value)-4:]
	}
	return Secret{ID: "fns_" + hex.EncodeToString(sum[:8]), Key: key, ValueLast4: last4, CreatedAt: t.Created, UpdatedAt: t.Updated}
}

// CheckSecretKey says what is wrong with a secret's key for the API ("" when nothing).
func CheckSecretKey(key string) string {
	if !secretKeyPattern.MatchString(key) {
		return "must be an environment variable name: A-Z, 0-9 and _, not starting with a digit, at most 128 characters"
	}
	if key == EnvAPIKey {
		return key + " is the function's own API key, provisioned by the platform"
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(key, p) {
			return fmt.Sprintf("names starting with %s are reserved for the runtime", p)
		}
	}
	return ""
}

// SetSecret writes one secret; the next run of the function has it.
func (s *Service) SetSecret(ctx context.Context, f *v1alpha1.Function, key, value string) (Secret, error) {
	var errs []apperror.FieldError
	if msg := CheckSecretKey(key); msg != "" {
		errs = append(errs, apperror.FieldError{Path: "key", Message: msg})
	}
	if value == "" || len(value) > MaxSecretValue {
		errs = append(errs, apperror.FieldError{Path: "value", Message: fmt.Sprintf("must be 1 to %d bytes", MaxSecretValue)})
	}
	if len(errs) > 0 {
		return Secret{}, apperror.InvalidFields(errs...)
	}
	var entry Secret
	err := s.writeSecret(ctx, f, func(data map[string][]byte, times map[string]secretTimes) error {
		if _, ok := data[key]; !ok && len(data) > MaxSecrets {
			return apperror.InvalidFields(apperror.FieldError{Path: "key", Message: fmt.Sprintf("a function has at most %d secrets", MaxSecrets)})
		}
		now := s.now().UnixMilli()
		t := times[key]
		if t.Created == 0 {
			t.Created = now
		}
		t.Updated = now
		times[key] = t
		data[key] = []byte(value)
		entry = secretEntry(f, key, value, t)
		return nil
	})
	return entry, err
}

// UnsetSecret removes one secret: 404 when the function has none of that key.
func (s *Service) UnsetSecret(ctx context.Context, f *v1alpha1.Function, key string) error {
	if key == EnvAPIKey {
		return apperror.InvalidFields(apperror.FieldError{Path: "key", Message: key + " is the function's own API key, provisioned by the platform"})
	}
	return s.writeSecret(ctx, f, func(data map[string][]byte, times map[string]secretTimes) error {
		if _, ok := data[key]; !ok {
			return apperror.NotFoundf("Function %s has no secret %s.", f.Name, key)
		}
		delete(data, key)
		delete(times, key)
		return nil
	})
}

// writeSecret changes the function's Secret (made, owned by the function, labelled for
// Switchboard's cache, on first use), again on a conflict with another writer.
func (s *Service) writeSecret(ctx context.Context, f *v1alpha1.Function, mutate func(map[string][]byte, map[string]secretTimes) error) error {
	return s.writeSecretWith(ctx, f, func(obj *corev1.Secret, times map[string]secretTimes) error { return mutate(obj.Data, times) })
}

// writeSecretWith is writeSecret with the whole object to change.
func (s *Service) writeSecretWith(ctx context.Context, f *v1alpha1.Function, mutate func(*corev1.Secret, map[string]secretTimes) error) error {
	key := client.ObjectKey{Namespace: f.Namespace, Name: SecretName(f)}
	for attempt := 0; ; attempt++ {
		var secret corev1.Secret
		err := s.live.Get(ctx, key, &secret)
		if apierrors.IsNotFound(err) {
			secret = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
				Labels: map[string]string{v1alpha1.SecretLabel: "true", v1alpha1.FunctionLabel: f.Name}}, Type: corev1.SecretTypeOpaque}
			if err := controllerutil.SetControllerReference(f, &secret, s.client.Scheme()); err != nil {
				return err
			}
		} else if err != nil {
			return fmt.Errorf("read the secrets of function %s: %w", f.Name, err)
		}
		if secret.Data == nil {
			secret.Data = map[string][]byte{}
		}
		if secret.Annotations == nil {
			secret.Annotations = map[string]string{}
		}
		times := timesOf(&secret)
		if err := mutate(&secret, times); err != nil {
			return err
		}
		b, _ := json.Marshal(times)
		secret.Annotations[secretTimesAnnotation] = string(b)
		if secret.ResourceVersion == "" {
			err = s.client.Create(ctx, &secret, client.FieldOwner(kubewrite.FieldManager))
		} else {
			err = s.client.Update(ctx, &secret, client.FieldOwner(kubewrite.FieldManager))
		}
		if (apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) && attempt < 5 {
			continue
		}
		if err != nil {
			return fmt.Errorf("write the secrets of function %s: %w", f.Name, err)
		}
		return nil
	}
}

func timesOf(secret *corev1.Secret) map[string]secretTimes {
	times := map[string]secretTimes{}
	_ = json.Unmarshal([]byte(secret.Annotations[secretTimesAnnotation]), &times)
	created := secret.CreationTimestamp.UnixMilli()
	for k := range secret.Data {
		if times[k].Created == 0 {
			times[k] = secretTimes{Created: created, Updated: created}
		}
	}
	return times
}
