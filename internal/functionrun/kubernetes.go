package functionrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The objects of the kubernetes runtime, in the projects' namespaces.
// +kubebuilder:rbac:groups="",resources=secrets;services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete

// KubernetesOptions configures Kubernetes.
type KubernetesOptions struct {
	// Client writes the function's objects (and reads them when Reader is nil).
	Client client.Client
	// Reader reads them back: it must see every object of the projects' namespaces, Secrets
	// included (the manager's API reader; its cache holds only labelled Secrets). nil: Client.
	Reader client.Reader
	// Image is the runner image (Dockerfile.function-runner); default DefaultRunnerImage.
	Image string
	// BundleURL is where a pod fetches a bundle by its sha256: the API's
	// GET /v1/functions/bundles/{sha256}, which takes the function's key.
	BundleURL func(sha256 string) string
	// InstallationNamespace is where Switchboard's pods live: the function's pods accept
	// connections from its pods (app.kubernetes.io/name: switchboard) only.
	InstallationNamespace string
	// MaxReplicas bounds the HorizontalPodAutoscaler (default DefaultMaxReplicas).
	MaxReplicas int32
	// ReadyTimeout is how long Invoke waits for a new deployment's pods (default
	// DefaultReadyTimeout).
	ReadyTimeout time.Duration
	// Endpoint is where a function's Service answers; nil: http://fn-<name>.<namespace>.svc:80.
	// Tests point it elsewhere.
	Endpoint func(namespace, name string) string
	// HTTP posts the invocations; nil: a client of its own, without keep-alives, so that the
	// Service spreads invocations over the pods the autoscaler adds.
	HTTP *http.Client
	// Log is the platform's own log. It never gets event contents, env values or output.
	Log logr.Logger
}

// Defaults of KubernetesOptions.
const (
	DefaultRunnerImage  = "ghcr.io/switchboard-io/function-runner:latest"
	DefaultMaxReplicas  = 5
	DefaultReadyTimeout = 2 * time.Minute
)

// The labels and annotation of the kubernetes runtime's objects.
const (
	LabelAppName   = "app.kubernetes.io/name"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelFunction  = "messaging.switchboard.io/function"
	// AnnotationRuntimeDeployment on the pod template is the Deployment.ID the pods run: a new
	// deployment or environment changes it, which rolls the pods.
	AnnotationRuntimeDeployment = "messaging.switchboard.io/runtime-deployment"

	functionAppName = "switchboard-function"
	// installationAppName is the app.kubernetes.io/name of Switchboard's own pods.
	installationAppName = "switchboard"
	runnerContainer     = "runner"
	runnerPort          = 8080
	runnerWorkDir       = "/work"
	readyPoll           = 250 * time.Millisecond
	// answerSlack is how much longer than its timeout an invocation's HTTP request may take:
	// the runner answers a timeout itself, unless its event loop is blocked.
	answerSlack = 5 * time.Second
	// maxAnswerBytes bounds the JSON of an answer read: a value and its logs, escaped.
	maxAnswerBytes = DefaultMaxResultBytes + 8*DefaultMaxLogBytes + 64<<10
)

// functionGV is the Function resource's group and version (api/v1alpha1).
var functionGV = schema.GroupVersion{Group: "messaging.switchboard.io", Version: "v1alpha1"}

// Kubernetes runs each function in pods of its own: a Deployment of the runner image (runner.js
// in serve mode, which fetches the bundle from the API), a Service in front of it, a
// NetworkPolicy that admits Switchboard's pods only, and a HorizontalPodAutoscaler. Every object
// is named fn-<function name> and owned by the Function, so deleting the Function deletes them.
//
// A Deployment.ID not seen before for a function (a new deployment, environment or limits)
// creates or updates the objects; the pod template's annotation then rolls the pods, and
// Invoke waits for pods of the new template before it posts. The record of what was ensured is
// in memory: after a restart the first invocation ensures again (an update that changes
// nothing when nothing changed).
type Kubernetes struct {
	o      KubernetesOptions
	reader client.Reader
	http   *http.Client

	mu     sync.Mutex
	fns    map[types.NamespacedName]*kubeFunction
	closed bool
}

var _ Runtime = (*Kubernetes)(nil)

// kubeFunction is what a Kubernetes knows of one function's objects.
type kubeFunction struct {
	mu      sync.Mutex // one ensure at a time; guards the fields
	ensured string     // the Deployment.ID the objects were last made for
	ready   string     // the Deployment.ID whose pods were seen available
	cold    bool       // no invocation ran since the last ensure
}

// NewKubernetes returns the runtime; it talks to nothing until the first Invoke.
func NewKubernetes(o KubernetesOptions) *Kubernetes {
	if o.Image == "" {
		o.Image = DefaultRunnerImage
	}
	if o.MaxReplicas <= 0 {
		o.MaxReplicas = DefaultMaxReplicas
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = DefaultReadyTimeout
	}
	if o.Endpoint == nil {
		o.Endpoint = func(namespace, name string) string {
			return fmt.Sprintf("http://%s.%s.svc:80", ObjectName(name), namespace)
		}
	}
	k := &Kubernetes{o: o, reader: o.Reader, http: o.HTTP, fns: map[types.NamespacedName]*kubeFunction{}}
	if k.reader == nil {
		k.reader = o.Client
	}
	if k.http == nil {
		k.http = &http.Client{Transport: &http.Transport{
			DialContext:       (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			DisableKeepAlives: true,
		}}
	}
	return k
}

// ObjectName is the name of a function's Deployment, Service, NetworkPolicy and autoscaler.
func ObjectName(function string) string { return "fn-" + function }

// RuntimeSecretName is the name of the Secret that holds a function's environment.
func RuntimeSecretName(function string) string { return ObjectName(function) + "-runtime" }

// functionName is what a function's name may be: it names the objects (fn-<name> is a DNS label).
var functionName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,58}[a-z0-9])?$`)

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Invoke makes or updates the function's objects when d is new to it, waits for its pods, and
// posts inv to them.
func (k *Kubernetes) Invoke(ctx context.Context, d *Deployment, inv Invocation) (Result, error) {
	if inv.ID == "" {
		return Result{}, errors.New("functionrun: an invocation needs an id")
	}
	if err := k.check(d); err != nil {
		return Result{}, err
	}
	memoryMB, timeout := d.MemoryMB, d.Timeout
	if memoryMB <= 0 {
		memoryMB = DefaultMemoryMB
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	f, err := k.function(d)
	if err != nil {
		return Result{}, err
	}
	if err := k.ensure(ctx, f, d, memoryMB, timeout); err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Result{}, fmt.Errorf("functionrun: making the objects of function %s/%s: %w", d.Namespace, d.OwnerName, err)
	}
	if r, ready, err := k.waitReady(ctx, f, d); !ready {
		return r, err
	}
	f.mu.Lock()
	cold := f.cold
	f.cold = false
	f.mu.Unlock()
	r, err := k.post(ctx, f, d, inv, timeout)
	r.Cold = cold
	return r, err
}

func (k *Kubernetes) check(d *Deployment) error {
	switch {
	case d.ID == "":
		return errors.New("functionrun: a deployment needs an id")
	case d.Namespace == "":
		return fmt.Errorf("functionrun: deployment %s has no namespace", d.ID)
	case !functionName.MatchString(d.OwnerName) || d.OwnerUID == "":
		return fmt.Errorf("functionrun: deployment %s names no valid owning Function (%q)", d.ID, d.OwnerName)
	case !sha256Hex.MatchString(d.BundleSHA256):
		return fmt.Errorf("functionrun: deployment %s has no bundle sha256", d.ID)
	case d.Architecture != "" && d.Architecture != "amd64" && d.Architecture != "arm64":
		return fmt.Errorf("functionrun: deployment %s: unknown architecture %q", d.ID, d.Architecture)
	case k.o.Client == nil || k.o.BundleURL == nil || k.o.InstallationNamespace == "":
		return errors.New("functionrun: the kubernetes runtime needs a client, BundleURL and the installation namespace")
	}
	return nil
}

// function returns the record of d's function.
func (k *Kubernetes) function(d *Deployment) (*kubeFunction, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil, ErrClosed
	}
	key := types.NamespacedName{Namespace: d.Namespace, Name: d.OwnerName}
	f := k.fns[key]
	if f == nil {
		f = &kubeFunction{}
		k.fns[key] = f
	}
	return f, nil
}

// ensure makes or updates the function's objects unless they were made for d already.
func (k *Kubernetes) ensure(ctx context.Context, f *kubeFunction, d *Deployment, memoryMB int, timeout time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ensured == d.ID {
		return nil
	}
	for _, o := range k.objects(d, memoryMB, timeout) {
		if err := k.upsert(ctx, o.obj, o.mutate); err != nil {
			return fmt.Errorf("%T %s: %w", o.obj, o.obj.GetName(), err)
		}
	}
	k.o.Log.V(1).Info("made the objects of a function", "namespace", d.Namespace, "function", d.OwnerName, "deployment", d.ID)
	f.ensured, f.ready, f.cold = d.ID, "", true
	return nil
}

// object is one of a function's objects: an empty one (name and namespace) and what makes it
// what it should be.
type object struct {
	obj    client.Object
	mutate func(client.Object)
}

// objects are d's objects; the Secret comes before the Deployment that reads it.
func (k *Kubernetes) objects(d *Deployment, memoryMB int, timeout time.Duration) []object {
	name := ObjectName(d.OwnerName)
	meta := func(n string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: d.Namespace, Name: n} }
	labels := functionLabels(d.OwnerName)
	owner := metav1.OwnerReference{APIVersion: functionGV.String(), Kind: "Function", Name: d.OwnerName, UID: d.OwnerUID,
		Controller: ref(true), BlockOwnerDeletion: ref(true)}
	own := func(o client.Object) {
		l := o.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		for k, v := range labels {
			l[k] = v
		}
		o.SetLabels(l)
		refs := []metav1.OwnerReference{}
		for _, r := range o.GetOwnerReferences() {
			if r.UID != owner.UID && (r.Controller == nil || !*r.Controller) {
				refs = append(refs, r)
			}
		}
		o.SetOwnerReferences(append(refs, owner))
	}
	selector := map[string]string{LabelAppName: functionAppName, LabelFunction: d.OwnerName}
	return []object{
		{&corev1.Secret{ObjectMeta: meta(RuntimeSecretName(d.OwnerName))}, func(o client.Object) {
			s := o.(*corev1.Secret)
			own(s)
			if s.Type == "" {
				s.Type = corev1.SecretTypeOpaque
			}
			s.StringData = nil
			s.Data = runtimeEnv(d)
		}},
		{&appsv1.Deployment{ObjectMeta: meta(name)}, func(o client.Object) {
			dep := o.(*appsv1.Deployment)
			own(dep)
			if dep.CreationTimestamp.IsZero() {
				// The autoscaler owns the count from then on; the selector is immutable.
				dep.Spec.Replicas = ref[int32](1)
				dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: selector}
			}
			dep.Spec.RevisionHistoryLimit = ref[int32](2)
			dep.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ref(intstr.FromInt32(0)), MaxSurge: ref(intstr.FromString("25%"))}}
			dep.Spec.Template = k.podTemplate(d, labels, memoryMB, timeout)
		}},
		{&corev1.Service{ObjectMeta: meta(name)}, func(o client.Object) {
			svc := o.(*corev1.Service)
			own(svc)
			if svc.Spec.Type == "" {
				svc.Spec.Type = corev1.ServiceTypeClusterIP
			}
			svc.Spec.Selector = selector
			svc.Spec.Ports = []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http")}}
		}},
		{&networkingv1.NetworkPolicy{ObjectMeta: meta(name)}, func(o client.Object) {
			np := o.(*networkingv1.NetworkPolicy)
			own(np)
			np.Spec = networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: selector},
				// Ingress only: egress stays open (the API, and whatever the function calls).
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					From: []networkingv1.NetworkPolicyPeer{{
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: k.o.InstallationNamespace}},
						PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{LabelAppName: installationAppName}},
					}},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: ref(corev1.ProtocolTCP), Port: ref(intstr.FromInt32(runnerPort))}},
				}},
			}
		}},
		{&autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: meta(name)}, func(o client.Object) {
			hpa := o.(*autoscalingv2.HorizontalPodAutoscaler)
			own(hpa)
			hpa.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
			hpa.Spec.MinReplicas = ref[int32](1)
			hpa.Spec.MaxReplicas = k.o.MaxReplicas
			hpa.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ref[int32](70)}}}}
		}},
	}
}

func functionLabels(function string) map[string]string {
	return map[string]string{LabelAppName: functionAppName, LabelManagedBy: "switchboard", LabelFunction: function}
}

// envKey is what a Secret key (and so an envFrom variable) may be.
var envKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// runtimeEnv is the Secret's data: the function's environment as Local gives it (without TZ,
// NODE_ENV and NODE_OPTIONS, which the pod sets or must not have), with the platform's ids.
func runtimeEnv(d *Deployment) map[string][]byte {
	data := map[string][]byte{}
	for _, kv := range functionEnv(d.Env, 0) {
		k, v, _ := strings.Cut(kv, "=")
		if envKey.MatchString(k) {
			data[k] = []byte(v)
		}
	}
	if _, ok := data["SWITCHBOARD_FUNCTION_ID"]; !ok {
		data["SWITCHBOARD_FUNCTION_ID"] = []byte(d.FunctionID)
	}
	if _, ok := data["SWITCHBOARD_DEPLOYMENT_ID"]; !ok {
		data["SWITCHBOARD_DEPLOYMENT_ID"] = []byte(d.ID)
	}
	// The function's own variables, as the pod gets them (functionEnv's list counted keys a
	// Secret cannot hold).
	keys := make([]string, 0, len(data))
	for k := range data {
		if k != SecretKeysVar {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	data[SecretKeysVar] = []byte(strings.Join(keys, ","))
	return data
}

// podTemplate is the pods of d.
func (k *Kubernetes) podTemplate(d *Deployment, labels map[string]string, memoryMB int, timeout time.Duration) corev1.PodTemplateSpec {
	mi := func(n int) resource.Quantity { return resource.MustParse(fmt.Sprintf("%dMi", n)) }
	healthz := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}
	// Liveness fails once the event loop was blocked about as long as an invocation may run:
	// the pod restarts, as the local runtime kills a process blocked past its timeout.
	const livenessPeriod = 10
	liveFailures := int32(timeout/(livenessPeriod*time.Second)) + 2
	var nodeSelector map[string]string
	if d.Architecture != "" {
		nodeSelector = map[string]string{corev1.LabelArchStable: d.Architecture}
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{AnnotationRuntimeDeployment: d.ID}},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ref(false),
			// No variables of the namespace's Services in the function's environment (ctx.secrets).
			EnableServiceLinks: ref(false),
			NodeSelector:       nodeSelector,
			// Invocations in flight finish after SIGTERM (runner.js).
			TerminationGracePeriodSeconds: ref(max(int64(30), int64((timeout+answerSlack)/time.Second))),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ref(true), RunAsUser: ref[int64](1000), RunAsGroup: ref[int64](1000), FSGroup: ref[int64](1000),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:    runnerContainer,
				Image:   k.o.Image,
				Command: []string{"node", fmt.Sprintf("--max-old-space-size=%d", memoryMB), "/runner/runner.js", "--serve", fmt.Sprint(runnerPort)},
				Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: runnerPort, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{
					{Name: "SWITCHBOARD_BUNDLE_URL", Value: k.o.BundleURL(d.BundleSHA256)},
					{Name: "SWITCHBOARD_BUNDLE_SHA256", Value: d.BundleSHA256},
					{Name: "SWITCHBOARD_WORK_DIR", Value: runnerWorkDir},
					{Name: "TZ", Value: "UTC"},
					{Name: "NODE_ENV", Value: "production"},
				},
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: RuntimeSecretName(d.OwnerName)}}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceMemory: mi(memoryMB), corev1.ResourceCPU: resource.MustParse("100m")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: mi(memoryMB + 64)},
				},
				// Loading (fetching the bundle) may take a while; the runner exits when it fails.
				StartupProbe:   &corev1.Probe{ProbeHandler: healthz, PeriodSeconds: 1, TimeoutSeconds: 2, FailureThreshold: 120},
				ReadinessProbe: &corev1.Probe{ProbeHandler: healthz, PeriodSeconds: 2, TimeoutSeconds: 2, FailureThreshold: 2},
				LivenessProbe:  &corev1.Probe{ProbeHandler: healthz, PeriodSeconds: livenessPeriod, TimeoutSeconds: 5, FailureThreshold: liveFailures},
				VolumeMounts:   []corev1.VolumeMount{{Name: "work", MountPath: runnerWorkDir}},
				// The runner's last stderr line (why it would not start) is the pod's termination message.
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot:             ref(true),
					RunAsUser:                ref[int64](1000),
					ReadOnlyRootFilesystem:   ref(true),
					AllowPrivilegeEscalation: ref(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
			}},
			Volumes: []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ref(resource.MustParse("256Mi"))}}}},
		},
	}
}

// upsert creates the object, or updates it when mutate changes it. empty holds its name and
// namespace only; every attempt starts from a copy of it.
func (k *Kubernetes) upsert(ctx context.Context, empty client.Object, mutate func(client.Object)) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		obj := empty.DeepCopyObject().(client.Object)
		err := k.reader.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			obj = empty.DeepCopyObject().(client.Object)
			mutate(obj)
			err = k.o.Client.Create(ctx, obj)
			if apierrors.IsAlreadyExists(err) {
				// Another worker made it meanwhile: update it instead.
				return apierrors.NewConflict(schema.GroupResource{}, obj.GetName(), err)
			}
			return err
		}
		if err != nil {
			return err
		}
		before := obj.DeepCopyObject()
		mutate(obj)
		if equality.Semantic.DeepEqual(before, obj) {
			return nil
		}
		return k.o.Client.Update(ctx, obj)
	})
}

// waitReady waits until pods of d's template serve. When they do not within ReadyTimeout it
// returns the crash result, ready false.
func (k *Kubernetes) waitReady(ctx context.Context, f *kubeFunction, d *Deployment) (Result, bool, error) {
	f.mu.Lock()
	done := f.ready == d.ID
	f.mu.Unlock()
	if done {
		return Result{}, true, nil
	}
	key := types.NamespacedName{Namespace: d.Namespace, Name: ObjectName(d.OwnerName)}
	deadline := time.NewTimer(k.o.ReadyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	var lastErr error
	for {
		var dep appsv1.Deployment
		err := k.reader.Get(ctx, key, &dep)
		switch {
		case err == nil && available(&dep):
			f.mu.Lock()
			if f.ensured == d.ID {
				f.ready = d.ID
			}
			f.mu.Unlock()
			return Result{}, true, nil
		case err != nil && ctx.Err() == nil:
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return Result{}, false, ctx.Err()
		case <-deadline.C:
			msg := fmt.Sprintf("the function's pods did not become ready within %s", k.o.ReadyTimeout)
			if why := k.podsWhy(ctx, d); why != "" {
				msg += ": " + why
			} else if lastErr != nil {
				msg += ": reading its Deployment: " + lastErr.Error()
			}
			k.o.Log.Info("a function's pods did not become ready", "namespace", d.Namespace, "function", d.OwnerName, "deployment", d.ID)
			return Result{Reason: ReasonCrash, Error: msg,
				Logs: []LogLine{{Time: time.Now(), Stream: StreamPlatform, Message: msg}}}, false, nil
		case <-tick.C:
		}
	}
}

// available reports whether the Deployment's current template has an available pod, and no pod
// of an older one is left to answer in its stead.
func available(dep *appsv1.Deployment) bool {
	s := dep.Status
	return s.ObservedGeneration >= dep.Generation && s.UpdatedReplicas >= 1 && s.AvailableReplicas >= 1 &&
		s.Replicas <= s.UpdatedReplicas
}

// podsWhy tells what keeps the function's pods from serving, as their statuses say ("" when
// they say nothing).
func (k *Kubernetes) podsWhy(ctx context.Context, d *Deployment) string {
	var pods corev1.PodList
	err := k.reader.List(ctx, &pods, client.InNamespace(d.Namespace),
		client.MatchingLabels{LabelAppName: functionAppName, LabelFunction: d.OwnerName})
	if err != nil {
		return ""
	}
	seen := map[string]bool{}
	var whys []string
	note := func(s string) {
		if s != "" && !seen[s] && len(whys) < 3 {
			seen[s] = true
			whys = append(whys, s)
		}
	}
	for _, p := range pods.Items {
		if p.Annotations[AnnotationRuntimeDeployment] != d.ID {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				note(strings.TrimSpace(c.Reason + " " + c.Message))
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.LastTerminationState.Terminated; t != nil {
				note(fmt.Sprintf("the runner exited with code %d (%s) %s", t.ExitCode, t.Reason, lastLine(t.Message)))
			}
			if w := cs.State.Waiting; w != nil && w.Reason != "ContainerCreating" {
				note(strings.TrimSpace(w.Reason + " " + lastLine(w.Message)))
			}
		}
	}
	return strings.TrimSpace(strings.Join(whys, "; "))
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return cutLine(s, 512)
}

// answer is runner.js's answer to POST /invoke.
type answer struct {
	OK     bool            `json:"ok"`
	Value  json.RawMessage `json:"value"`
	Reason string          `json:"reason"`
	Error  string          `json:"error"`
	Logs   []struct {
		TS int64  `json:"ts"`
		S  string `json:"s"`
		M  string `json:"m"`
	} `json:"logs"`
}

// post runs inv on the function's pods.
func (k *Kubernetes) post(ctx context.Context, f *kubeFunction, d *Deployment, inv Invocation, timeout time.Duration) (Result, error) {
	event := inv.Event
	if len(event) == 0 {
		event = json.RawMessage("{}")
	}
	body, err := json.Marshal(struct {
		ID        string          `json:"id"`
		Event     json.RawMessage `json:"event"`
		TimeoutMs int64           `json:"timeoutMs"`
	}{inv.ID, event, timeout.Milliseconds()})
	if err != nil {
		return Result{}, fmt.Errorf("functionrun: the event is not JSON: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, timeout+answerSlack)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, strings.TrimRight(k.o.Endpoint(d.Namespace, d.OwnerName), "/")+"/invoke", bytes.NewReader(body))
	if err != nil {
		return Result{}, fmt.Errorf("functionrun: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	failed := func(err error) (Result, error) {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		r := Result{Duration: time.Since(start)}
		if rctx.Err() != nil {
			// The runner answers a timeout itself: no answer at all means its event loop is
			// blocked (the liveness probe restarts such a pod).
			r.Reason, r.Error = ReasonTimeout, "timed out after "+timeout.String()
			r.Logs = []LogLine{{Time: time.Now(), Stream: StreamPlatform,
				Message: "the invocation timed out after " + timeout.String() + " with the event loop blocked"}}
			return r, nil
		}
		// Look at the pods again before the next invocation.
		f.mu.Lock()
		if f.ready == d.ID {
			f.ready = ""
		}
		f.mu.Unlock()
		r.Reason, r.Error = ReasonCrash, "the function's runtime could not be reached: "+err.Error()
		r.Logs = []LogLine{{Time: time.Now(), Stream: StreamPlatform, Message: r.Error}}
		return r, nil
	}
	resp, err := k.http.Do(req)
	if err != nil {
		return failed(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return failed(err)
	}
	r := Result{Duration: time.Since(start)}
	crash := func(msg string) (Result, error) {
		r.Reason, r.Error = ReasonCrash, msg
		r.Logs = []LogLine{{Time: time.Now(), Stream: StreamPlatform, Message: msg}}
		return r, nil
	}
	if resp.StatusCode != http.StatusOK {
		return crash(fmt.Sprintf("the function's runtime answered %s: %s", resp.Status, cutLine(strings.TrimSpace(string(data)), 512)))
	}
	if len(data) > maxAnswerBytes {
		r.Reason, r.Error = ReasonError, fmt.Sprintf("the return value is larger than %s of JSON", formatBytes(DefaultMaxResultBytes))
		return r, nil
	}
	var a answer
	if err := json.Unmarshal(data, &a); err != nil {
		return crash("the function's runtime gave a malformed answer")
	}
	logs := newLogSink(DefaultMaxLineBytes, DefaultMaxLogBytes)
	for _, l := range a.Logs {
		t := time.Now()
		if l.TS > 0 {
			t = time.UnixMilli(l.TS)
		}
		switch l.S {
		case "log", "info", "warn", "error", "debug", StreamStdout, StreamStderr:
			logs.add(t, l.S, l.M)
		case StreamPlatform:
			logs.mu.Lock()
			logs.lines = append(logs.lines, LogLine{Time: t, Stream: StreamPlatform, Message: l.M})
			logs.mu.Unlock()
		default:
			logs.add(t, StreamLog, l.M)
		}
	}
	switch {
	case a.OK && len(a.Value) > DefaultMaxResultBytes:
		r.Reason, r.Error = ReasonError, fmt.Sprintf("the return value is larger than %s of JSON", formatBytes(DefaultMaxResultBytes))
	case a.OK:
		r.Value = a.Value
		if len(r.Value) == 0 {
			r.Value = json.RawMessage("null")
		}
	case a.Reason == string(ReasonTimeout):
		r.Reason, r.Error = ReasonTimeout, a.Error
		logs.platform("the invocation " + a.Error)
	case a.Reason == string(ReasonMemory) || a.Reason == string(ReasonCrash):
		r.Reason, r.Error = Reason(a.Reason), a.Error
	default:
		r.Reason, r.Error = ReasonError, a.Error
	}
	r.Logs = logs.take()
	return r, nil
}

// Retire does nothing: a function's objects serve its current deployment until the next one
// updates them (which rolls the pods), and the Function's deletion deletes them through their
// owner reference. A paused function keeps its pods (scaled by the autoscaler, at least one).
func (k *Kubernetes) Retire(string) {}

// Close makes later invocations fail with ErrClosed; the objects and their pods stay.
func (k *Kubernetes) Close() error {
	k.mu.Lock()
	k.closed = true
	k.mu.Unlock()
	return nil
}

// ref is a pointer to v.
func ref[T any](v T) *T { return &v }
