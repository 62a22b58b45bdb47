package devenv

import (
	"context"
	"errors"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
)

// The seeded objects.
const (
	DefaultNamespace = "default"
	DefaultProject   = "default"
	DefaultSender    = "default"
	devKeyName       = "dev"
)

// seedResources creates the default project and its default sandbox Sender unless they exist.
func seedResources(ctx context.Context, k8s client.Client) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DefaultNamespace}},
		&v1alpha1.Project{
			ObjectMeta: metav1.ObjectMeta{Namespace: DefaultNamespace, Name: DefaultProject},
			// Verified, so the sandbox shows the documented ceilings of a verified Free project
			// (10,000 SMS a day) rather than refusing a developer's 26th test SMS.
			Spec: v1alpha1.ProjectSpec{DisplayName: "Default project", Plan: v1alpha1.PlanFree, Verification: v1alpha1.VerificationBusinessApproved},
		},
		&v1alpha1.Sender{
			ObjectMeta: metav1.ObjectMeta{Namespace: DefaultNamespace, Name: DefaultSender},
			// Every channel on, through the sandbox: nothing leaves this machine.
			Spec: v1alpha1.SenderSpec{
				DisplayName: "Default sender",
				Default:     true,
				Transport:   v1alpha1.TransportSandbox,
				PhoneNumber: "+15005550006",
				SMS:         &v1alpha1.Activation{Active: true},
				SMSOneway:   &v1alpha1.Enablement{Enabled: true},
				Voice:       &v1alpha1.Enablement{Enabled: true},
				// Its WhatsApp is a coexistence number, so that the Business app syncs can be tried.
				WhatsApp: &v1alpha1.ConnectedAccount{AccountID: "sandbox-whatsapp", DisplayPhoneNumber: "+1 500-555-0006", DisplayName: "Sandbox", Active: true,
					Coexistence: true},
				Telegram:  &v1alpha1.ConnectedAccount{AccountID: "sandbox-telegram", DisplayName: "sandbox_bot", Active: true},
				Instagram: &v1alpha1.ConnectedAccount{AccountID: "sandbox-instagram", DisplayName: "sandbox", Active: true},
				Messenger: &v1alpha1.ConnectedAccount{AccountID: "sandbox-messenger", DisplayName: "Sandbox page", Active: true},
				Email:     &v1alpha1.EmailSettings{Address: "hello@sandbox.switchboard.local", FromName: "Switchboard sandbox", ReceivingEnabled: true},
			},
		},
	}
	for _, o := range objs {
		if err := k8s.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("seed %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// seedKey returns the dev test key: the one saved in keyFile while it is still valid for the
// default project, else a new one, saved there for the next run.
func seedKey(ctx context.Context, keys *apikey.Service, keyFile string) (string, error) {
	if b, err := os.ReadFile(keyFile); err == nil {
		secret := trimLine(b)
		key, err := keys.Authenticate(ctx, secret)
		if err == nil && key.Project == DefaultNamespace && key.TestMode() {
			return secret, nil
		}
		if err != nil && apperror.As(err) == nil {
			return "", err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read %s: %w", keyFile, err)
	}
	secret, _, err := keys.Create(ctx, DefaultNamespace, devKeyName, apikey.Test, []string{"*"})
	if err != nil {
		return "", err
	}
	if err := writeFileAtomic(keyFile, []byte(secret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("save dev key: %w", err)
	}
	return secret, nil
}
