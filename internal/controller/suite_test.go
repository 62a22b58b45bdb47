package controller_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/admission"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/controller"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/dnsresolve"
	"github.com/switchboard-io/switchboard/internal/dnsresolve/dnstest"
	"github.com/switchboard-io/switchboard/internal/domainverify"
	"github.com/switchboard-io/switchboard/internal/functions"
	"github.com/switchboard-io/switchboard/internal/index"
	"github.com/switchboard-io/switchboard/internal/invitation"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/providercheck"
	"github.com/switchboard-io/switchboard/internal/templatereview"
	"github.com/switchboard-io/switchboard/internal/transport/registry"
)

var (
	k8s     client.Client
	testEnv *envtest.Environment
	cancel  context.CancelFunc
	// dnsServer is the DNS the EmailDomain controller asks; pool is its Postgres (announcements
	// and the deliveries of domain events).
	dnsServer *dnstest.Server
	pool      *pgxpool.Pool
	// invitations is the controller's invitation service, which the tests also move states with.
	invitations *invitation.Service
)

// skipAdmission labels an object the suite's admission webhooks do not see.
const skipAdmission = "switchboard.test/skip-admission"

// emailInboundHost is the installation's inbound mail host in these tests.
const emailInboundHost = "mx.switchboard.test"

// functionsPublicURL is the installation's public address functions answer HTTP under.
const functionsPublicURL = "https://switchboard.test"

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controller Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))

	// The real CRDs, so their CEL rules run as they do for kubectl, and the real admission
	// webhooks, served by the manager below. Objects labelled skipAdmission are not sent to them:
	// they stand for what was stored while the webhook could not be reached.
	webhooks, err := os.ReadFile(filepath.Join("..", "..", "config", "webhook", "manifests.yaml"))
	Expect(err).NotTo(HaveOccurred())
	var validating admissionv1.ValidatingWebhookConfiguration
	Expect(yaml.Unmarshal(webhooks, &validating)).To(Succeed())
	for i := range validating.Webhooks {
		validating.Webhooks[i].ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: skipAdmission, Operator: metav1.LabelSelectorOpDoesNotExist}}}
	}
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{ValidatingWebhooks: []*admissionv1.ValidatingWebhookConfiguration{&validating}},
	}
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())

	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())

	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  controller.CacheOptions(),
		WebhookServer: webhook.NewServer(webhook.Options{Host: testEnv.WebhookInstallOptions.LocalServingHost,
			Port: testEnv.WebhookInstallOptions.LocalServingPort, CertDir: testEnv.WebhookInstallOptions.LocalServingCertDir}),
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(index.Register(context.Background(), mgr.GetFieldIndexer())).To(Succeed())
	dnsServer, err = dnstest.New()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(dnsServer.Close)
	pool = pgtest.NewPool(GinkgoTB())
	verifier := &domainverify.Verifier{Client: mgr.GetClient(), Live: mgr.GetAPIReader(),
		Resolver: dnsresolve.New(dnsServer.Addr(), time.Second), Config: domainverify.Config{InboundHost: emailInboundHost},
		Pool: pool, Deliveries: delivery.NewService(mgr.GetClient())}
	// The checks the binary runs: Twilio's against the twiliotest peer a test points baseURL at.
	reviewer := &templatereview.Reviewer{Client: mgr.GetClient(), Live: mgr.GetAPIReader(), Pool: pool,
		Deliveries: delivery.NewService(mgr.GetClient())}
	invitations = invitation.NewService(mgr.GetClient(), mgr.GetAPIReader(), pool, delivery.NewService(mgr.GetClient()),
		[]byte("invitation-token-key-of-the-test"), "https://connect.switchboard.test").WithFieldManager("switchboard-manager")
	// Tests point Providers of their namespaces at loopback peers: the operator's allowance.
	// Projects' own twilio accounts prove their numbers through the registry, as in the binary.
	accounts := &registry.Registry{Reader: mgr.GetClient(), InstallationNamespace: installationNamespace, AllowProjectEndpoints: true}
	Expect(controller.Setup(mgr, controller.Options{ProviderChecks: providercheck.Checks(), AllowProjectProviderEndpoints: true, EmailDomains: verifier,
		Templates: reviewer, Invitations: invitations, InvitationAbandonAfter: invitationAbandonAfter,
		InstallationNamespace: installationNamespace, NumberAccounts: accounts,
		Functions: functions.NewService(mgr.GetClient(), mgr.GetAPIReader(), pool, apikey.NewService(pool), functionsPublicURL)})).To(Succeed())
	// The builder, as a worker runs it: the Function sample is deployed.
	Expect(mgr.Add(functions.NewBuilder(pool, functions.BuilderOptions{Poll: 50 * time.Millisecond}))).To(Succeed())
	Expect(admission.Setup(mgr)).To(Succeed())

	var ctx context.Context
	ctx, cancel = context.WithCancel(context.Background())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	// Specs start once the controllers watch, and a busy machine (make test runs packages side
	// by side) gets seconds rather than the default second to reconcile.
	Expect(mgr.GetCache().WaitForCacheSync(ctx)).To(BeTrue())
	SetDefaultEventuallyTimeout(10 * time.Second)
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// newNamespace creates a namespace with a unique name for one test.
func newNamespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// update applies mutate to the latest obj and writes it, retrying when the controller's status
// patch got in between, as `kubectl edit` would.
func update[T client.Object](ctx context.Context, obj T, mutate func(T)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return k8s.Update(ctx, obj)
	})
}
