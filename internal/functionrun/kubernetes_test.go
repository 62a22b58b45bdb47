package functionrun

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// The control plane of the kubernetes runtime's tests, started by the first of them.
var (
	kubeOnce   sync.Once
	kubeEnv    *envtest.Environment
	kubeClient client.Client
	kubeErr    error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if kubeEnv != nil {
		_ = kubeEnv.Stop()
	}
	os.Exit(code)
}

// kube is a client of envtest's API server (with the CRDs); the test is skipped without
// KUBEBUILDER_ASSETS (`make test` sets it: hack/envtest-assets.sh --check).
func kube(tb testing.TB) client.Client {
	tb.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		tb.Skip("KUBEBUILDER_ASSETS is not set (hack/envtest-assets.sh --check)")
	}
	kubeOnce.Do(func() {
		ctrllog.SetLogger(logr.Discard())
		kubeEnv = &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
		cfg, err := kubeEnv.Start()
		if err != nil {
			kubeErr = fmt.Errorf("start envtest: %w", err)
			return
		}
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			kubeErr = err
			return
		}
		if err := v1alpha1.AddToScheme(scheme); err != nil {
			kubeErr = err
			return
		}
		kubeClient, kubeErr = client.New(cfg, client.Options{Scheme: scheme})
	})
	if kubeErr != nil {
		tb.Fatal(kubeErr)
	}
	return kubeClient
}

// newFunction makes a namespace and a Function in it, to own the runtime's objects.
func newFunction(tb testing.TB, c client.Client, ns, name string) *v1alpha1.Function {
	tb.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		tb.Fatal(err)
	}
	f := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.FunctionSpec{DisplayName: "Greeter", MemoryMB: 128, TimeoutSeconds: 5, Architecture: "arm64"}}
	if err := c.Create(ctx, f); err != nil {
		tb.Fatal(err)
	}
	return f
}

// markAvailable plays the Deployment controller, which envtest does not run: until the test
// ends, it reports the current template of the function's Deployment available.
func markAvailable(tb testing.TB, c client.Client, ns, function string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	tb.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var dep appsv1.Deployment
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ObjectName(function)}, &dep); err == nil &&
				dep.Status.ObservedGeneration < dep.Generation {
				dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1,
					ReadyReplicas: 1, AvailableReplicas: 1}
				_ = c.Status().Update(ctx, &dep)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
}

func kubeInvoke(tb testing.TB, k *Kubernetes, d *Deployment, id, event string) Result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := k.Invoke(ctx, d, Invocation{ID: id, Event: json.RawMessage(event)})
	if err != nil {
		tb.Fatalf("Invoke %s: %v", id, err)
	}
	return r
}

func TestKubernetes(t *testing.T) {
	c := kube(t)
	ctx := context.Background()
	const ns, name = "project-k8s", "greeter"
	f := newFunction(t, c, ns, name)

	bundle := build(t, serveSource)
	sha := sha256Of(bundle)
	srv := newBundleServer(t, bundle, nil)
	// The pod's runner, as a process of the test: the Service's address is its.
	runner := startServing(t, servingEnv(srv, sha))
	runner.waitHealthy(t)

	var bundleURLs []string
	k := NewKubernetes(KubernetesOptions{
		Client: c,
		Image:  "registry.test/function-runner:1.2.3",
		BundleURL: func(s string) string {
			bundleURLs = append(bundleURLs, s)
			return "https://api.test/v1/functions/bundles/" + s
		},
		InstallationNamespace: "switchboard-system",
		MaxReplicas:           7,
		ReadyTimeout:          30 * time.Second,
		Endpoint: func(namespace, function string) string {
			if namespace != ns || function != name {
				t.Errorf("Endpoint(%q, %q)", namespace, function)
			}
			return runner.url
		},
	})
	defer k.Close()
	markAvailable(t, c, ns, name)

	d := &Deployment{ID: "fdep_1-aaaaaaaaaaaa", FunctionID: name, Namespace: ns, OwnerUID: f.UID, OwnerName: name,
		BundleSHA256: sha, Architecture: "arm64", MemoryMB: 256, Timeout: 5 * time.Second,
		Env: map[string]string{"ZAVU_API_KEY": serveKey, "ZAVUDEV_BASE_URL": "https://api.test", "MY_SECRET": "one",
			"TZ": "Europe/Paris", "NODE_OPTIONS": "--inspect", "bad key": "dropped"}}

	r := kubeInvoke(t, k, d, "inv-1", `{"name":"Ada"}`)
	wantOK(t, r, `{"greeting":"hi Ada","id":"inv-1","fn":"greeter","secret":"s3cret"}`)
	if !r.Cold || r.Duration <= 0 {
		t.Errorf("first invocation: cold %v, duration %v", r.Cold, r.Duration)
	}
	var got []string
	for _, l := range r.Logs {
		got = append(got, l.Stream+": "+l.Message)
		if time.Since(l.Time) > time.Minute || time.Since(l.Time) < 0 {
			t.Errorf("line %q at %v", l.Message, l.Time)
		}
	}
	if want := "log: hello Ada|warn: careful|stdout: raw out"; strings.Join(got, "|") != want {
		t.Errorf("logs %q, want %q", got, want)
	}
	r = kubeInvoke(t, k, d, "inv-2", `{"fail":"boom"}`)
	wantFail(t, r, ReasonError, "it failed: boom")
	if r.Cold {
		t.Error("the second invocation is cold")
	}
	r = kubeInvoke(t, k, d, "inv-3", `{"type":"tool","data":{"tool":"double","arguments":{"n":4}}}`)
	wantOK(t, r, `{"doubled":8}`)

	// The objects.
	key := client.ObjectKey{Namespace: ns, Name: "fn-greeter"}
	labels := map[string]string{"app.kubernetes.io/name": "switchboard-function", "app.kubernetes.io/managed-by": "switchboard",
		"messaging.switchboard.io/function": name}
	owned := func(o client.Object) {
		t.Helper()
		for k, v := range labels {
			if o.GetLabels()[k] != v {
				t.Errorf("%T %s: label %s = %q", o, o.GetName(), k, o.GetLabels()[k])
			}
		}
		refs := o.GetOwnerReferences()
		if len(refs) != 1 || refs[0].APIVersion != "messaging.switchboard.io/v1alpha1" || refs[0].Kind != "Function" ||
			refs[0].Name != name || refs[0].UID != f.UID || refs[0].Controller == nil || !*refs[0].Controller {
			t.Errorf("%T %s: owner references %+v", o, o.GetName(), refs)
		}
	}

	var secret corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fn-greeter-runtime"}, &secret); err != nil {
		t.Fatal(err)
	}
	owned(&secret)
	wantData := map[string]string{"ZAVU_API_KEY": serveKey, "ZAVUDEV_BASE_URL": "https://api.test", "MY_SECRET": "one",
		"SWITCHBOARD_FUNCTION_ID": name, "SWITCHBOARD_DEPLOYMENT_ID": d.ID,
		"SWITCHBOARD_SECRET_KEYS": "MY_SECRET,SWITCHBOARD_DEPLOYMENT_ID,SWITCHBOARD_FUNCTION_ID,ZAVUDEV_BASE_URL,ZAVU_API_KEY"}
	if len(secret.Data) != len(wantData) {
		t.Errorf("secret keys %v", keys(secret.Data))
	}
	for k, v := range wantData {
		if string(secret.Data[k]) != v {
			t.Errorf("secret %s = %q, want %q", k, secret.Data[k], v)
		}
	}

	var dep appsv1.Deployment
	if err := c.Get(ctx, key, &dep); err != nil {
		t.Fatal(err)
	}
	owned(&dep)
	if *dep.Spec.Replicas != 1 || dep.Spec.Selector.MatchLabels["messaging.switchboard.io/function"] != name {
		t.Errorf("replicas %d, selector %v", *dep.Spec.Replicas, dep.Spec.Selector)
	}
	tpl := dep.Spec.Template
	if tpl.Annotations[AnnotationRuntimeDeployment] != d.ID || tpl.Labels["messaging.switchboard.io/function"] != name {
		t.Errorf("template meta %v %v", tpl.Labels, tpl.Annotations)
	}
	ps := tpl.Spec
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken || ps.NodeSelector["kubernetes.io/arch"] != "arm64" {
		t.Errorf("automount %v, node selector %v", ps.AutomountServiceAccountToken, ps.NodeSelector)
	}
	if len(ps.Containers) != 1 {
		t.Fatalf("containers %+v", ps.Containers)
	}
	ctr := ps.Containers[0]
	if ctr.Name != "runner" || ctr.Image != "registry.test/function-runner:1.2.3" ||
		strings.Join(ctr.Command, " ") != "node --max-old-space-size=256 /runner/runner.js --serve 8080" {
		t.Errorf("container %s %s %q", ctr.Name, ctr.Image, ctr.Command)
	}
	env := map[string]string{}
	for _, e := range ctr.Env {
		env[e.Name] = e.Value
	}
	if env["SWITCHBOARD_BUNDLE_URL"] != "https://api.test/v1/functions/bundles/"+sha || env["SWITCHBOARD_BUNDLE_SHA256"] != sha ||
		env["SWITCHBOARD_WORK_DIR"] != "/work" {
		t.Errorf("env %v", env)
	}
	if len(ctr.EnvFrom) != 1 || ctr.EnvFrom[0].SecretRef == nil || ctr.EnvFrom[0].SecretRef.Name != "fn-greeter-runtime" {
		t.Errorf("envFrom %+v", ctr.EnvFrom)
	}
	if q := ctr.Resources.Requests[corev1.ResourceMemory]; q.String() != "256Mi" {
		t.Errorf("memory request %s", q.String())
	}
	if q := ctr.Resources.Requests[corev1.ResourceCPU]; q.String() != "100m" {
		t.Errorf("cpu request %s", q.String())
	}
	if q := ctr.Resources.Limits[corev1.ResourceMemory]; q.String() != "320Mi" {
		t.Errorf("memory limit %s", q.String())
	}
	if p := ctr.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "http" {
		t.Errorf("readiness probe %+v", p)
	}
	if len(ctr.Ports) != 1 || ctr.Ports[0].ContainerPort != 8080 || ctr.Ports[0].Name != "http" {
		t.Errorf("ports %+v", ctr.Ports)
	}
	sc := ctr.SecurityContext
	if sc == nil || !*sc.RunAsNonRoot || *sc.RunAsUser != 1000 || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation ||
		len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("security context %+v", sc)
	}
	if len(ctr.VolumeMounts) != 1 || ctr.VolumeMounts[0].MountPath != "/work" || len(ps.Volumes) != 1 || ps.Volumes[0].EmptyDir == nil ||
		ps.Volumes[0].Name != ctr.VolumeMounts[0].Name {
		t.Errorf("volumes %+v, mounts %+v", ps.Volumes, ctr.VolumeMounts)
	}

	var svc corev1.Service
	if err := c.Get(ctx, key, &svc); err != nil {
		t.Fatal(err)
	}
	owned(&svc)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 80 || svc.Spec.Ports[0].TargetPort.String() != "http" ||
		svc.Spec.Selector["messaging.switchboard.io/function"] != name || svc.Spec.Selector["app.kubernetes.io/name"] != "switchboard-function" {
		t.Errorf("service %+v", svc.Spec)
	}

	var np networkingv1.NetworkPolicy
	if err := c.Get(ctx, key, &np); err != nil {
		t.Fatal(err)
	}
	owned(&np)
	if np.Spec.PodSelector.MatchLabels["messaging.switchboard.io/function"] != name ||
		len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress || len(np.Spec.Ingress) != 1 {
		t.Fatalf("network policy %+v", np.Spec)
	}
	if from := np.Spec.Ingress[0].From; len(from) != 1 || from[0].NamespaceSelector == nil || from[0].PodSelector == nil ||
		from[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "switchboard-system" ||
		from[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != "switchboard" {
		t.Errorf("ingress peers %+v", from)
	}
	if ports := np.Spec.Ingress[0].Ports; len(ports) != 1 || ports[0].Port.IntValue() != 8080 {
		t.Errorf("ingress ports %+v", ports)
	}

	var hpa autoscalingv2.HorizontalPodAutoscaler
	if err := c.Get(ctx, key, &hpa); err != nil {
		t.Fatal(err)
	}
	owned(&hpa)
	if *hpa.Spec.MinReplicas != 1 || hpa.Spec.MaxReplicas != 7 || hpa.Spec.ScaleTargetRef.Kind != "Deployment" ||
		hpa.Spec.ScaleTargetRef.Name != "fn-greeter" || len(hpa.Spec.Metrics) != 1 || hpa.Spec.Metrics[0].Resource == nil ||
		hpa.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU || *hpa.Spec.Metrics[0].Resource.Target.AverageUtilization != 70 {
		t.Errorf("hpa %+v", hpa.Spec)
	}

	// The same deployment ensures nothing again; another one (new environment) updates the
	// Secret and the template, and its first invocation is cold.
	if n := len(bundleURLs); n != 1 {
		t.Errorf("the objects were made %d times", n)
	}
	gen := dep.Generation
	d2 := *d
	d2.ID = "fdep_1-bbbbbbbbbbbb"
	d2.Architecture = ""
	d2.Env = map[string]string{"ZAVU_API_KEY": serveKey, "MY_SECRET": "two"}
	r = kubeInvoke(t, k, &d2, "inv-4", `{"name":"Bo"}`)
	wantOK(t, r, `{"greeting":"hi Bo","id":"inv-4","fn":"greeter","secret":"s3cret"}`)
	if !r.Cold {
		t.Error("the first invocation of the new deployment is not cold")
	}
	if err := c.Get(ctx, key, &dep); err != nil {
		t.Fatal(err)
	}
	if dep.Generation <= gen || dep.Spec.Template.Annotations[AnnotationRuntimeDeployment] != d2.ID ||
		dep.Spec.Template.Spec.NodeSelector != nil || dep.Status.ObservedGeneration < dep.Generation {
		t.Errorf("after the new deployment: generation %d (was %d), annotations %v, node selector %v, observed %d",
			dep.Generation, gen, dep.Spec.Template.Annotations, dep.Spec.Template.Spec.NodeSelector, dep.Status.ObservedGeneration)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fn-greeter-runtime"}, &secret); err != nil {
		t.Fatal(err)
	}
	if string(secret.Data["MY_SECRET"]) != "two" || string(secret.Data["SWITCHBOARD_DEPLOYMENT_ID"]) != d2.ID || secret.Data["ZAVUDEV_BASE_URL"] != nil {
		t.Errorf("secret after the new deployment: %v", keys(secret.Data))
	}

	// An unreachable Service is a crash, not a platform error.
	down := NewKubernetes(KubernetesOptions{Client: c, BundleURL: k.o.BundleURL, InstallationNamespace: "switchboard-system",
		Endpoint: func(string, string) string { return fmt.Sprintf("http://127.0.0.1:%d", freePort(t)) }})
	r = kubeInvoke(t, down, &d2, "inv-5", `{}`)
	wantFail(t, r, ReasonCrash, "the function's runtime could not be reached")
}

// Pods that never become available fail the invocation after ReadyTimeout.
func TestKubernetesReadyTimeout(t *testing.T) {
	c := kube(t)
	const ns, name = "project-k8s-timeout", "stuck"
	f := newFunction(t, c, ns, name)
	k := NewKubernetes(KubernetesOptions{Client: c, BundleURL: func(s string) string { return "https://api.test/b/" + s },
		InstallationNamespace: "switchboard-system", ReadyTimeout: time.Second,
		Endpoint: func(string, string) string { t.Error("posted to pods that are not ready"); return "http://127.0.0.1:1" }})
	d := &Deployment{ID: "fdep_2-cccccccccccc", FunctionID: name, Namespace: ns, OwnerUID: f.UID, OwnerName: name,
		BundleSHA256: strings.Repeat("0", 64)}
	start := time.Now()
	r := kubeInvoke(t, k, d, "inv-1", `{}`)
	wantFail(t, r, ReasonCrash, "the function's pods did not become ready within 1s")
	if el := time.Since(start); el < time.Second || el > 10*time.Second {
		t.Errorf("the wait took %v", el)
	}
	if !platformLine(r, "did not become ready") {
		t.Errorf("no platform line: %v", r.Logs)
	}
	// The objects were made nonetheless.
	var dep appsv1.Deployment
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "fn-stuck"}, &dep); err != nil {
		t.Fatal(err)
	}
	if dep.Spec.Template.Spec.Containers[0].Image != DefaultRunnerImage || dep.Spec.Template.Spec.NodeSelector != nil {
		t.Errorf("image %s, node selector %v", dep.Spec.Template.Spec.Containers[0].Image, dep.Spec.Template.Spec.NodeSelector)
	}
	// A deployment that is no Function's is refused before anything is made.
	bad := *d
	bad.OwnerUID = ""
	if _, err := k.Invoke(context.Background(), &bad, Invocation{ID: "x"}); err == nil {
		t.Error("a deployment without its owner was run")
	}
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
