package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/invitation"
	"github.com/switchboard-io/switchboard/internal/postgres"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

// TestInvitationResendAndLink runs `switchboard invitation resend` and `link` against a real
// API server: the resend is asked on the resource, and the link is the one the API shows.
func TestInvitationResendAndLink(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set; run the tests through `make test`")
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	user, err := env.AddUser(envtest.User{Name: "operator", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kcFile := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kcFile, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	_ = v1alpha1.AddToScheme(scheme)
	_ = corev1.AddToScheme(scheme)
	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "acme"}}); err != nil {
		t.Fatal(err)
	}
	inv := &v1alpha1.Invitation{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "ana"},
		Spec: v1alpha1.InvitationSpec{ClientName: "Ana's Bakery", ConnectionType: v1alpha1.ConnectionMessenger}}
	if err := k8s.Create(ctx, inv); err != nil {
		t.Fatal(err)
	}
	expires := time.Now().Add(72 * time.Hour).UTC().Truncate(time.Second)
	inv.Status.State, inv.Status.ExpiresAt = v1alpha1.InvitationFailed, &metav1.Time{Time: expires}
	if err := k8s.Status().Update(ctx, inv); err != nil {
		t.Fatal(err)
	}

	// kubectl get invitations shows the client, the type, the state and the expiry.
	kubectl := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), "--kubeconfig", kcFile, "get", "invitations", "-n", "acme")
	table, err := kubectl.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get invitations: %v\n%s", err, table)
	}
	lines := strings.Split(strings.TrimSpace(string(table)), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME CLIENT TYPE STATE EXPIRES AGE" ||
		!strings.Contains(lines[1], "Ana's Bakery") || !strings.Contains(lines[1], "messenger") || !strings.Contains(lines[1], "failed") ||
		!strings.Contains(lines[1], expires.Format(time.RFC3339)) {
		t.Errorf("kubectl get invitations =\n%s", table)
	}

	code, stdout, stderr := run(t, "invitation", "resend", "ana", "--project", "acme", "--kubeconfig", kcFile)
	if code != 0 || !strings.Contains(stdout, "resend requested") {
		t.Fatalf("resend = %d %q %q", code, stdout, stderr)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(inv), inv); err != nil || inv.Spec.ResendRequestedAt == nil {
		t.Errorf("resendRequestedAt = %v (%v)", inv.Spec.ResendRequestedAt, err)
	}
	if code, _, stderr := run(t, "invitation", "resend", "bob", "--project", "acme", "--kubeconfig", kcFile); code == 0 ||
		!strings.Contains(stderr, "not found") {
		t.Errorf("resend of nothing = %d %q", code, stderr)
	}

	url := pgtest.NewDatabase(t)
	code, stdout, stderr = run(t, "invitation", "link", "ana", "--project", "acme", "--kubeconfig", kcFile, "--database-url", url,
		"--dashboard-url", "https://connect.acme.example/")
	pool, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	key, err := postgres.SharedSecret(ctx, pool, invitation.KeyName, invitation.KeySize)
	if err != nil {
		t.Fatal(err)
	}
	want := invitation.NewService(nil, nil, nil, nil, key, "https://connect.acme.example").URL(inv)
	if code != 0 || strings.TrimSpace(stdout) != want || !strings.HasPrefix(want, "https://connect.acme.example/invitations/") {
		t.Errorf("link = %d %q %q, want %s", code, stdout, stderr, want)
	}
	if code, _, _ := run(t, "invitation", "link", "ana", "--project", "acme", "--kubeconfig", kcFile, "--database-url", url); code != 2 {
		t.Errorf("link without --dashboard-url = %d, want 2", code)
	}
}
